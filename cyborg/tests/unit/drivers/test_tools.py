"""Tests of the helpers the drivers share: health of SR-IOV VFs."""

import os
import shutil

import pytest

from cyborg.drivers import base
from cyborg.drivers import pci
from cyborg.drivers import sysfs
from cyborg.drivers import tools
from cyborg.tests import sysfs_builder

PF, VF = '0000:3b:00.0', '0000:3b:02.0'


@pytest.fixture
def nic(tmp_path, override):
    """A NIC PF with one VF as the agent's sysfs; the VF's report."""
    root = str(tmp_path / 'sys')
    builder = sysfs_builder.SysfsBuilder(root)
    builder.pci(PF, '0x8086', '0x1572', '0x020000', driver='i40e',
                totalvfs=4)
    builder.vfs(PF, [VF], '0x8086', '0x154c', '0x020000', driver='iavf')
    override('sysfs_root', root, group='agent')
    fn = sysfs.Sysfs(root).pci_function(VF)
    return builder, pci.device(fn, 'NIC', '8086:154c', [], 'test')


def _write(builder, address, name, value):
    with open(os.path.join(builder.device_dir(address), name), 'wb') as out:
        out.write(value)


def test_a_healthy_vf_is_judged_by_its_pf(nic):
    builder, vf = nic
    # NOTE(tests): judged by itself, the VF would be a fault: its own
    # config space reads no vendor.
    with open(os.path.join(builder.device_dir(VF), 'config'), 'rb') as config:
        assert config.read(4) == b'\xff\xff\xff\xff'
    assert tools.pci_health(vf) == base.Health(base.OK, None, ('pci',))


@pytest.mark.parametrize('name, value, reason', [
    ('vendor', b'0xffff\n', '%s fell off the bus (vendor reads 0xffff)'),
    ('config', b'\xff' * 64, 'config space of %s reads no vendor'),
])
def test_a_vf_whose_pf_reads_all_ones_is_a_fault(nic, name, value, reason):
    builder, vf = nic
    _write(builder, PF, name, value)
    assert tools.pci_health(vf) == base.Health(base.FAILED, reason % PF,
                                               ('pci',))


def test_a_vf_of_a_gone_pf_is_a_fault(nic):
    builder, vf = nic
    os.remove(builder.path('bus', 'pci', 'devices', PF))
    shutil.rmtree(builder.device_dir(PF))
    assert tools.pci_health(vf) == base.Health(
        base.FAILED, 'PCI function %s is gone from sysfs' % PF, ('pci',))


def test_a_gone_vf_is_a_fault(nic):
    builder, vf = nic
    os.remove(builder.path('bus', 'pci', 'devices', VF))
    assert tools.pci_health(vf) == base.Health(
        base.FAILED, 'PCI function %s is gone from sysfs' % VF, ('pci',))


def test_a_physfn_link_naming_no_address_fails_the_check(nic):
    builder, vf = nic
    physfn = os.path.join(builder.device_dir(VF), 'physfn')
    os.remove(physfn)
    os.symlink('../nowhere', physfn)
    with pytest.raises(sysfs.MalformedEntry, match='nowhere'):
        tools.pci_health(vf)
