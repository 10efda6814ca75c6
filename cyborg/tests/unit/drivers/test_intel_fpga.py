"""Tests of the Intel FPGA (PAC) driver on a simulated FPGA host."""

import logging
import os

import pytest

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import intel_fpga
from cyborg.tests.fixtures import gpu_fpga_hosts as hosts
from cyborg.tests.fixtures import pci_hosts

HOST = 'compute-1'
D5005 = '0000:3b:00.0'
ARRIA10 = '0000:5e:00.0'
ARRIA10_VFS = ['0000:5e:00.1', '0000:5e:00.2']


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


def test_pac_without_vfs():
    devices = _discover()
    # The Xilinx card and the NIC belong to other drivers.
    assert sorted(devices) == [D5005, ARRIA10]
    pac = devices[D5005]
    assert pac.model == 'Intel PAC D5005'
    (dep,) = pac.deployables
    assert dep.num_accelerators == 1
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('PCI', hosts.pci_info(D5005))]
    assert 'CUSTOM_FPGA_INTEL_PAC_D5005' in dep.traits
    assert ('CUSTOM_FPGA_FUNCTION_ID_INTEL_9F81BA12_1D38_4CC7_953A_'
            'DAFEEF45065B') in dep.traits
    assert 'fpga.region:' + hosts.D5005_INTERFACE in pac.services


def test_names_use_the_host_and_are_unique_across_hosts():
    one = _discover(host='compute-1.example.org')
    two = _discover(host='compute-2.example.org')
    names = [dep.name for devices in (one, two)
             for dev in devices.values() for dep in dev.deployables]
    assert len(names) == len(set(names)) == 4
    assert 'compute-1.example.org_%s' % ARRIA10 in names


def test_card_not_ready_is_skipped(fpga_host, caplog):
    os.remove(os.path.join(fpga_host, 'class', 'fpga',
                           os.path.basename(_fpga_dev(fpga_host, ARRIA10))))
    caplog.set_level(logging.INFO)
    assert sorted(_discover(fpga_host)) == [D5005]
    lines = [r.getMessage() for r in caplog.records
             if r.name == intel_fpga.__name__]
    assert len(lines) == 1 and 'not ready' in lines[0]


@pytest.mark.parametrize('breakage', [
    'missing_afu_id', 'missing_interface_id', 'garbage_afu_id',
    'dangling_virtfn', 'dangling_physfn', 'missing_vendor'])
def test_a_malformed_card_is_skipped_alone(fpga_host, caplog, breakage):
    fpga_dev = _fpga_dev(fpga_host, ARRIA10)
    pf_dir = os.path.join(fpga_host, 'bus', 'pci', 'devices', ARRIA10)
    if breakage == 'missing_afu_id':
        os.remove(os.path.join(fpga_dev, 'intel-fpga-port.1', 'afu_id'))
    elif breakage == 'missing_interface_id':
        os.remove(os.path.join(fpga_dev, 'intel-fpga-fme.1', 'pr',
                               'interface_id'))
    elif breakage == 'garbage_afu_id':
        with open(os.path.join(fpga_dev, 'intel-fpga-port.1', 'afu_id'),
                  'w') as out:
            out.write('not an id!\n')
    elif breakage == 'dangling_virtfn':
        os.remove(os.path.join(pf_dir, 'virtfn1'))
        os.symlink('../0000:5e:00.7', os.path.join(pf_dir, 'virtfn1'))
    elif breakage == 'dangling_physfn':
        link = os.path.join(fpga_host, 'bus', 'pci', 'devices',
                            ARRIA10_VFS[0], 'physfn')
        os.remove(link)
        os.symlink('../0000:5f:00.0', link)
    else:
        os.remove(os.path.join(pf_dir, 'vendor'))
    caplog.set_level(logging.WARNING)
    assert sorted(_discover(fpga_host)) == [D5005]
    assert ARRIA10 in caplog.text


def _program(tmp_path, override, image=True, **tool):
    path, record = hosts.fake_tool(tmp_path, 'fpgaconf', **tool)
    override('fpgaconf_path', path, group='fpga')
    image_path = str(tmp_path / 'green.gbs')
    if image:
        with open(image_path, 'wb') as out:
            out.write(b'GBS')
    pac = _discover()[ARRIA10]
    with pci_hosts.privsep_in_process():
        intel_fpga.IntelFpgaDriver().program(pac, pac.deployables[0],
                                             image_path)
    return record, image_path


def test_program_runs_fpgaconf_on_the_pf(tmp_path, override):
    record, image_path = _program(tmp_path, override)
    assert hosts.recorded_argv(record) == [
        '--bus', '0x5e', '--device', '0x00', '--function', '0x0',
        image_path]


def test_program_failure_carries_stderr(tmp_path, override):
    with pytest.raises(exception.DriverError) as caught:
        _program(tmp_path, override, exit_code=1,
                 stderr='Error: no suitable slots found')
    message = str(caught.value)
    assert 'intel_fpga' in message
    assert 'fpgaconf exited with 1: Error: no suitable slots found' in message


def test_program_without_the_tool(tmp_path, override):
    image_path = str(tmp_path / 'green.gbs')
    with open(image_path, 'wb') as out:
        out.write(b'GBS')
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
    pac = _discover(fpga_host)[D5005]
    assert driver.health(pac) == base.HEALTHY
    with open(os.path.join(fpga_host, 'bus', 'pci', 'devices', D5005,
                           'config'), 'wb') as out:
        out.write(b'\xff\xff')
    assert not driver.health(pac).ok
