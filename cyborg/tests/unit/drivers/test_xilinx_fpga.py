"""Tests of the Xilinx FPGA (Alveo) driver on a simulated FPGA host."""

import logging
import os

import pytest

from cyborg import exception
from cyborg.drivers import report
from cyborg.drivers import xilinx_fpga
from cyborg.tests.fixtures import gpu_fpga_hosts as hosts
from cyborg.tests.fixtures import pci_hosts

HOST = 'compute-1'
MGMT = '0000:d8:00.0'
USER = '0000:d8:00.1'


def _discover(root=None, host=HOST):
    devices = pci_hosts.discover(xilinx_fpga.XilinxFpgaDriver(),
                                 root or pci_hosts.committed('fpga-host'),
                                 host)
    # NOTE(tests): not pci_hosts.check_report: an Alveo card is one
    # accelerator with two handles (both PFs go to the same guest).
    for dev in devices:
        for dep in dev.deployables:
            assert pci_hosts.is_valid_resource_class(dep.resource_class)
            assert all(pci_hosts.is_valid_trait(t) for t in dep.traits)
    original = report.HostReport(host, devices)
    assert report.HostReport.from_primitive(
        original.to_primitive()) == original
    return devices


@pytest.fixture
def fpga_host(tmp_path):
    return hosts.build_fpga_host(str(tmp_path / 'fpga-host'))


def _unplug(root, address):
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', address))


def test_mgmt_and_user_pf_pair_into_one_device():
    # The Intel PACs and the NIC on the same host belong to other drivers.
    (card,) = _discover()
    assert (card.type, card.vendor) == ('FPGA', '0x10ee')
    assert card.controlpath.cpid_info == hosts.pci_info(MGMT)
    assert card.services == ['fpga.shell']
    (dep,) = card.deployables
    assert dep.name == '%s_%s' % (HOST, MGMT)
    assert (dep.resource_class, dep.num_accelerators) == ('FPGA', 1)
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('PCI', hosts.pci_info(MGMT)), ('PCI', hosts.pci_info(USER))]
    assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_FPGA_XILINX',
                          'CUSTOM_FPGA_PRODUCT_ID_5004']
    # One lower-case spelling, the one programming requests match.
    assert card.driver_name == dep.driver_name == 'xilinx_fpga'
    assert xilinx_fpga.XilinxFpgaDriver.name == 'xilinx_fpga'


def test_names_are_unique_across_hosts():
    (one,) = _discover(host='compute-1')
    (two,) = _discover(host='compute-2')
    assert one.deployables[0].name != two.deployables[0].name


@pytest.mark.parametrize('gone, alone', [(USER, MGMT), (MGMT, USER)])
def test_a_lone_function_is_reported(fpga_host, caplog, gone, alone):
    _unplug(fpga_host, gone)
    caplog.set_level(logging.INFO)
    (card,) = _discover(fpga_host)
    (dep,) = card.deployables
    assert dep.name == '%s_%s' % (HOST, alone)
    assert [h.attach_info for h in dep.attach_handles] == [
        hosts.pci_info(alone)]
    lines = [r.getMessage() for r in caplog.records
             if r.name == xilinx_fpga.__name__]
    assert len(lines) == 1 and alone in lines[0]


def test_a_malformed_function_is_left_out(fpga_host, caplog):
    with open(os.path.join(fpga_host, 'bus', 'pci', 'devices', USER,
                           'class'), 'w') as out:
        out.write('0x12\n')
    caplog.set_level(logging.WARNING)
    (card,) = _discover(fpga_host)
    assert len(card.deployables[0].attach_handles) == 1
    assert USER in caplog.text


def _image(tmp_path):
    image_path = str(tmp_path / 'shell.xsabin')
    with open(image_path, 'wb') as out:
        out.write(b'XSABIN')
    return image_path


def test_program_runs_xbmgmt_on_the_mgmt_pf(tmp_path, override):
    path, record = hosts.fake_tool(tmp_path, 'xbmgmt')
    override('xbmgmt_path', path, group='fpga')
    image_path = _image(tmp_path)
    (card,) = _discover()
    with pci_hosts.privsep_in_process():
        xilinx_fpga.XilinxFpgaDriver().program(card, card.deployables[0],
                                               image_path)
    assert hosts.recorded_argv(record) == [
        'program', '--device', MGMT, '--base', '--image', image_path]


def test_program_failure_carries_stderr(tmp_path, override):
    path, _record = hosts.fake_tool(
        tmp_path, 'xbmgmt', exit_code=1,
        stderr='ERROR: Failed to find the shell image')
    override('xbmgmt_path', path, group='fpga')
    (card,) = _discover()
    with pytest.raises(exception.DriverError) as caught, \
            pci_hosts.privsep_in_process():
        xilinx_fpga.XilinxFpgaDriver().program(
            card, card.deployables[0], _image(tmp_path))
    assert ('xbmgmt exited with 1: ERROR: Failed to find the shell image'
            in str(caught.value))
    assert 'xilinx_fpga' in str(caught.value)


def test_program_needs_the_mgmt_pf(tmp_path, override, fpga_host):
    path, record = hosts.fake_tool(tmp_path, 'xbmgmt')
    override('xbmgmt_path', path, group='fpga')
    _unplug(fpga_host, MGMT)
    (card,) = _discover(fpga_host)
    with pytest.raises(exception.DriverError, match='not a management'), \
            pci_hosts.privsep_in_process():
        xilinx_fpga.XilinxFpgaDriver().program(
            card, card.deployables[0], _image(tmp_path))
    assert not os.path.exists(record)


def test_health(fpga_host, override):
    override('sysfs_root', fpga_host, group='agent')
    driver = xilinx_fpga.XilinxFpgaDriver()
    (card,) = _discover(fpga_host)
    assert driver.health(card).ok
    _unplug(fpga_host, MGMT)
    assert not driver.health(card).ok
