"""Tests of the Intel FPGA driver on the simulated FPGA host, and its tools.

The hosts with cards on each kernel driver are tested in
test_intel_fpga_hosts.
"""

import logging
import os
import shutil

import pytest

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import intel_fpga
from cyborg.tests.fixtures import gpu_fpga_hosts as hosts
from cyborg.tests.fixtures import intel_fpga_hosts as fpga_hosts
from cyborg.tests.fixtures import pci_hosts

HOST = 'compute-1'
# NOTE(tests): fpga-host's card at 3b:00.0 is built from the ids its
# module calls PAC_D5005; the model follows the device id as dfl-pci.c
# names it (0b2b is the D5005, 0b30 the N3000), whichever that is.
PAC = '0000:3b:00.0'
PAC_MODEL_TRAIT, PAC_MODEL = intel_fpga.MODELS[hosts.PAC_D5005[1][2:]]
ARRIA10 = '0000:5e:00.0'
ARRIA10_VFS = ['0000:5e:00.1', '0000:5e:00.2']
PF_DIR = 'bus/pci/devices/%s' % ARRIA10


def _discover(root=None, host=HOST):
    devices = pci_hosts.discover(intel_fpga.IntelFpgaDriver(),
                                 root or pci_hosts.committed('fpga-host'),
                                 host)
    pci_hosts.check_report(host, devices)
    return pci_hosts.by_address(devices)


@pytest.fixture
def fpga_host(tmp_path):
    return hosts.build_fpga_host(str(tmp_path / 'fpga-host'))


def _fpga_dev(root, address):
    fpga = os.path.join(root, 'bus', 'pci', 'devices', address, 'fpga')
    (name,) = os.listdir(fpga)
    return os.path.join(fpga, name)


def test_pac_with_vfs():
    pac = _discover()[ARRIA10]
    assert (pac.type, pac.vendor, pac.model) == (
        'FPGA', '0x8086', 'Intel PAC Arria 10 GX')
    assert pac.driver_name == 'intel_fpga'
    assert pac.vendor_board_info == {'fpga_stack': 'intel-fpga',
                                     'fpga_dev': 'intel-fpga-dev.1'}
    (dep,) = pac.deployables
    assert dep.name == '%s_%s' % (HOST, ARRIA10)
    assert (dep.resource_class, dep.num_accelerators) == ('FPGA', 2)
    assert dep.driver_name == 'intel_fpga'
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('PCI', hosts.pci_info(vf)) for vf in ARRIA10_VFS]
    assert sorted(dep.traits) == sorted([
        'OWNER_CYBORG', 'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
        'CUSTOM_FPGA_REGION_INTEL_69528DB6_EB31_577A_8C36_68F9FAA081F6',
        'CUSTOM_FPGA_FUNCTION_ID_INTEL_D8424DC4A4A3C413F89E433683F9040B'])
    assert pac.services == [
        'fpga.function:' + hosts.A10_AFU,
        'fpga.region:' + hosts.A10_INTERFACE]
    assert pac.warnings == []


def test_pac_without_vfs():
    devices = _discover()
    # The Xilinx card and the NIC belong to other drivers.
    assert sorted(devices) == [PAC, ARRIA10]
    pac = devices[PAC]
    assert pac.model == PAC_MODEL
    (dep,) = pac.deployables
    assert dep.num_accelerators == 1
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('PCI', hosts.pci_info(PAC))]
    assert sorted(dep.traits) == sorted([
        'OWNER_CYBORG', 'CUSTOM_FPGA_INTEL',
        'CUSTOM_FPGA_INTEL_' + PAC_MODEL_TRAIT,
        'CUSTOM_FPGA_REGION_INTEL_BFAC4D851EE856FE8C95865CE1BBAA2D',
        'CUSTOM_FPGA_FUNCTION_ID_INTEL_9F81BA12_1D38_4CC7_953A_'
        'DAFEEF45065B'])
    assert pac.services == ['fpga.function:' + hosts.D5005_AFU,
                            'fpga.region:' + hosts.D5005_INTERFACE]


def test_names_use_the_host_and_are_unique_across_hosts():
    one = _discover(host='compute-1.example.org')
    two = _discover(host='compute-2.example.org')
    names = [dep.name for devices in (one, two)
             for dev in devices.values() for dep in dev.deployables]
    assert len(names) == len(set(names)) == 4
    assert 'compute-1.example.org_%s' % ARRIA10 in names


def test_a_card_without_its_tree_is_reported_with_a_warning(fpga_host):
    # The driver is bound but its intel-fpga-dev.N is not there (yet).
    shutil.rmtree(os.path.join(fpga_host, PF_DIR, 'fpga'))
    pac = _discover(fpga_host)[ARRIA10]
    assert sorted(pac.deployables[0].traits) == [
        'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_ARRIA10', 'OWNER_CYBORG']
    assert pac.services == []
    assert pac.vendor_board_info == {'fpga_stack': 'intel-fpga'}
    assert pac.warnings == [
        '%s/fpga: no intel-fpga-dev.N with the FME and ports below it: the '
        'region and function are unknown' % PF_DIR]
    assert pac.deployables[0].num_accelerators == 2


@pytest.mark.parametrize('breakage, kept, warning', [
    ('missing_afu_id', 'region',
     'intel-fpga-port.1/afu_id: missing AFU id'),
    ('garbage_afu_id', 'region',
     "intel-fpga-port.1/afu_id: AFU id 'not an id!' does not parse"),
    ('missing_interface_id', 'function',
     'intel-fpga-fme.1/pr/interface_id: missing PR interface id'),
])
def test_a_damaged_id_costs_only_its_trait(fpga_host, caplog, breakage,
                                           kept, warning):
    fpga_dev = _fpga_dev(fpga_host, ARRIA10)
    if breakage == 'missing_afu_id':
        os.remove(os.path.join(fpga_dev, 'intel-fpga-port.1', 'afu_id'))
    elif breakage == 'garbage_afu_id':
        with open(os.path.join(fpga_dev, 'intel-fpga-port.1', 'afu_id'),
                  'w') as out:
            out.write('not an id!\n')
    else:
        os.remove(os.path.join(fpga_dev, 'intel-fpga-fme.1', 'pr',
                               'interface_id'))
    caplog.set_level(logging.WARNING)
    devices = _discover(fpga_host)
    assert sorted(devices) == [PAC, ARRIA10]
    pac = devices[ARRIA10]
    assert pac.warnings == [
        '%s/fpga/intel-fpga-dev.1/%s' % (PF_DIR, warning)]
    traits = pac.deployables[0].traits
    assert [t for t in traits if 'REGION' in t or 'FUNCTION' in t] == (
        ['CUSTOM_FPGA_REGION_INTEL_69528DB6_EB31_577A_8C36_68F9FAA081F6']
        if kept == 'region' else
        ['CUSTOM_FPGA_FUNCTION_ID_INTEL_D8424DC4A4A3C413F89E433683F9040B'])
    assert ARRIA10 in caplog.text


@pytest.mark.parametrize('breakage', ['dangling_virtfn', 'dangling_physfn'])
def test_a_damaged_vf_link_loses_that_vf_only(fpga_host, breakage):
    if breakage == 'dangling_virtfn':
        link = os.path.join(fpga_host, PF_DIR, 'virtfn1')
        os.remove(link)
        os.symlink('../0000:5e:00.7', link)
        warning = ('%s/virtfn1: links to 0000:5e:00.7, which is no readable '
                   'PCI function' % PF_DIR)
    else:
        link = os.path.join(fpga_host, 'bus', 'pci', 'devices',
                            ARRIA10_VFS[1], 'physfn')
        os.remove(link)
        os.symlink('../0000:5f:00.0', link)
        warning = ('%s/virtfn1: links to %s, which is not a VF of this '
                   'function' % (PF_DIR, ARRIA10_VFS[1]))
    pac = _discover(fpga_host)[ARRIA10]
    (dep,) = pac.deployables
    assert [h.attach_info for h in dep.attach_handles] == [
        hosts.pci_info(ARRIA10_VFS[0])]
    assert warning in pac.warnings
    assert len(dep.traits) == 5


def test_a_card_whose_identity_does_not_read_is_left_out(fpga_host, caplog):
    os.remove(os.path.join(fpga_host, PF_DIR, 'vendor'))
    caplog.set_level(logging.WARNING)
    assert sorted(_discover(fpga_host)) == [PAC]
    assert ARRIA10 in caplog.text


# --- Programming. -----------------------------------------------------------

def _image(tmp_path):
    image_path = str(tmp_path / 'green.gbs')
    with open(image_path, 'wb') as out:
        out.write(b'GBS')
    return image_path


def _program(tmp_path, override, host='fpga-host', address=ARRIA10,
             image=True, **tool):
    """Program the card at ``address`` with fake OPAE tools for both
    drivers; returns the argument records of (fpgaconf, DFL fpgaconf)."""
    path, record = hosts.fake_tool(tmp_path, 'fpgaconf', **tool)
    dfl_dir = tmp_path / 'opae-dfl'
    dfl_dir.mkdir()
    dfl_path, dfl_record = hosts.fake_tool(dfl_dir, 'fpgaconf', **tool)
    override('fpgaconf_path', path, group='fpga')
    override('dfl_fpgaconf_path', dfl_path, group='fpga')
    image_path = _image(tmp_path) if image else str(tmp_path / 'green.gbs')
    pac = _discover(pci_hosts.committed(host))[address]
    with pci_hosts.privsep_in_process():
        intel_fpga.IntelFpgaDriver().program(pac, pac.deployables[0],
                                             image_path)
    return record, dfl_record, image_path


def test_program_runs_fpgaconf_on_the_pf(tmp_path, override):
    record, dfl_record, image_path = _program(tmp_path, override)
    assert hosts.recorded_argv(record) == [
        '--bus', '0x5e', '--device', '0x00', '--function', '0x0',
        image_path]
    assert not os.path.exists(dfl_record)


@pytest.mark.parametrize('host, address, dfl, argv', [
    ('fpga-opae-host', '0000:5e:00.0', False,
     ['--bus', '0x5e', '--device', '0x00', '--function', '0x0']),
    ('fpga-dfl-host', '0000:b2:00.0', True,
     ['--segment', '0x0000', '--bus', '0xb2', '--device', '0x00',
      '--function', '0x0']),
    ('fpga-dfl-host', '0000:5e:00.0', True,
     ['--segment', '0x0000', '--bus', '0x5e', '--device', '0x00',
      '--function', '0x0']),
])
def test_program_uses_the_tool_of_the_cards_kernel_driver(
        tmp_path, override, host, address, dfl, argv):
    record, dfl_record, image_path = _program(tmp_path, override, host,
                                              address)
    ran, idle = (dfl_record, record) if dfl else (record, dfl_record)
    assert hosts.recorded_argv(ran) == argv + [image_path]
    assert not os.path.exists(idle)


def test_a_card_on_vfio_pci_cannot_be_programmed(tmp_path, override):
    with pytest.raises(exception.DriverError,
                       match='0000:d8:00.0 is bound to vfio-pci, not to '
                             'dfl-pci or intel-fpga-pci'):
        _program(tmp_path, override, 'fpga-dfl-host', '0000:d8:00.0')
    assert not os.path.exists(str(tmp_path / 'fpgaconf.argv'))
    assert not os.path.exists(str(tmp_path / 'opae-dfl' / 'fpgaconf.argv'))


def test_program_failure_carries_stderr(tmp_path, override):
    with pytest.raises(exception.DriverError) as caught:
        _program(tmp_path, override, exit_code=1,
                 stderr='Error: no suitable slots found')
    message = str(caught.value)
    assert 'intel_fpga' in message
    assert 'fpgaconf exited with 1: Error: no suitable slots found' in message


def test_program_without_the_tool(tmp_path, override):
    image_path = _image(tmp_path)
    override('fpgaconf_path', str(tmp_path / 'missing' / 'fpgaconf'),
             group='fpga')
    pac = _discover()[ARRIA10]
    with pytest.raises(exception.DriverError, match='cannot run'), \
            pci_hosts.privsep_in_process():
        intel_fpga.IntelFpgaDriver().program(pac, pac.deployables[0],
                                             image_path)


def test_program_without_the_image(tmp_path, override):
    with pytest.raises(exception.DriverError, match='no such file'):
        _program(tmp_path, override, image=False)
    assert not os.path.exists(str(tmp_path / 'fpgaconf.argv'))


def test_program_timeout(tmp_path, override):
    override('program_timeout', 1, group='fpga')
    with pytest.raises(exception.DriverError,
                       match='did not finish within 1 seconds'):
        _program(tmp_path, override, sleep=3)


def test_health(fpga_host, override):
    override('sysfs_root', fpga_host, group='agent')
    driver = intel_fpga.IntelFpgaDriver()
    pac = _discover(fpga_host)[PAC]
    assert driver.health(pac).state == base.OK
    with open(os.path.join(fpga_host, 'bus', 'pci', 'devices', PAC,
                           'config'), 'wb') as out:
        out.write(b'\xff\xff')
    assert not driver.health(pac).ok


def test_the_fixture_ids_are_the_kernels_format():
    # NOTE(tests): afu_id, pr/interface_id and compat_id print two 64-bit
    # halves as "%016llx%016llx".
    for name in dir(fpga_hosts):
        if name.endswith(('_AFU', '_INTERFACE')):
            value = getattr(fpga_hosts, name)
            assert len(value) == 32 and int(value, 16) >= 0, name
