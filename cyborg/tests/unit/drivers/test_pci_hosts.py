"""The committed simulated hosts must equal a fresh build of them."""

import os

import pytest

from cyborg.tests.fixtures import accelerator_hosts
from cyborg.tests.fixtures import pci_hosts

BUILDERS = {**pci_hosts.HOSTS, **accelerator_hosts.HOSTS}


@pytest.mark.parametrize('host', sorted(BUILDERS))
def test_committed_tree_equals_a_fresh_build(tmp_path, host):
    fresh = pci_hosts.snapshot(BUILDERS[host](str(tmp_path)))
    committed = pci_hosts.snapshot(pci_hosts.committed(host))
    # NOTE(tests): regenerate with python -m cyborg.tests.fixtures.pci_hosts
    # (or .accelerator_hosts) when a builder changes.
    assert sorted(committed) == sorted(fresh)
    assert committed == fresh


@pytest.mark.parametrize('module, host', [(pci_hosts, 'ascend-host'),
                                          (accelerator_hosts, 'alveo-host')])
def test_main_rebuilds_the_named_hosts(tmp_path, monkeypatch, module, host):
    committed = pci_hosts.snapshot(pci_hosts.committed(host))
    monkeypatch.setattr(pci_hosts, 'SYSFS_DIR', str(tmp_path))
    module.main([host])
    assert os.listdir(tmp_path) == [host]
    assert pci_hosts.snapshot(str(tmp_path / host)) == committed


def test_functions_have_a_config_space():
    tree = pci_hosts.snapshot(pci_hosts.committed('qat-host'))
    kind, config = tree['devices/pci0000:3d/0000:3d:00.0/config']
    assert (kind, config[:4]) == ('file', b'\x86\x80\xc8\x37')


def test_cards_sit_behind_their_root_ports():
    tree = pci_hosts.snapshot(pci_hosts.committed('platform-host'))
    assert tree['bus/pci/devices/0000:01:00.0'] == (
        'link', '../../../devices/pci0000:00/0000:00:1c.0/0000:01:00.0')
    assert tree['bus/pci/devices/0000:18:02.1'] == (
        'link', '../../../devices/pci0000:17/0000:17:00.0/0000:18:02.1')
    assert tree['devices/pci0000:17/0000:17:00.0/0000:18:02.1/physfn'] == (
        'link', '../0000:18:00.0')
    # Root ports and the chipset's own functions sit on the root bus.
    assert tree['bus/pci/devices/0000:17:00.0'] == (
        'link', '../../../devices/pci0000:17/0000:17:00.0')
    assert tree['bus/pci/devices/0000:00:1f.4'] == (
        'link', '../../../devices/pci0000:00/0000:00:1f.4')
