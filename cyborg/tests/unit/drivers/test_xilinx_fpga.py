"""Tests of the Xilinx FPGA (Alveo) driver on a simulated Alveo host."""

import os

import pytest

from cyborg import exception
from cyborg.agent import resource_tracker
from cyborg.drivers import sysfs
from cyborg.drivers import xilinx_fpga
from cyborg.tests.fixtures import accelerator_hosts as hosts
from cyborg.tests.fixtures import gpu_fpga_hosts as cards
from cyborg.tests.fixtures import pci_hosts

HOST = 'compute-1'
U250_MGMT, U250_USER = '0000:d8:00.0', '0000:d8:00.1'
U280_MGMT, U280_USER = '0000:3b:00.0', '0000:3b:00.1'
U50_MGMT, U50_USER = '0000:af:00.0', '0000:af:00.1'
GOLDEN = '0000:5e:00.0'


def _discover(root=None, host=HOST):
    devices = pci_hosts.discover(xilinx_fpga.XilinxFpgaDriver(),
                                 root or pci_hosts.committed('alveo-host'),
                                 host)
    pci_hosts.check_report(host, devices)
    return pci_hosts.by_address(devices)


@pytest.fixture
def alveo_host(tmp_path):
    sysfs.forget_logged()
    return pci_hosts.copy_host('alveo-host', tmp_path / 'sys')


def _fn(root, address, *parts):
    return os.path.join(root, 'bus', 'pci', 'devices', address, *parts)


def _unplug(root, address):
    os.remove(_fn(root, address))


def _write(root, address, name, value):
    with open(_fn(root, address, name), 'w') as out:
        out.write(value)


def _handles(device):
    return [[(h.attach_type, h.attach_info) for h in dep.attach_handles]
            for dep in device.deployables]


def _card(model, mgmt, user, product):
    return {
        'type': 'FPGA', 'vendor': '0x10ee', 'model': model,
        'control': cards.pci_info(mgmt), 'services': ['fpga.shell'],
        'vendor_info': {'management_function': mgmt,
                        'user_function': user},
        'deployables': [('%s_%s' % (HOST, user), 'FPGA', 1,
                         ['CUSTOM_FPGA_PRODUCT_ID_%s' % product,
                          'CUSTOM_FPGA_XILINX', 'OWNER_CYBORG'])],
        'handles': [[('PCI', cards.pci_info(user))]],
        'warnings': []}


def _shape(device):
    return {
        'type': device.type, 'vendor': device.vendor, 'model': device.model,
        'control': device.controlpath.cpid_info,
        'services': device.services,
        'vendor_info': device.vendor_board_info,
        'deployables': [(dep.name, dep.resource_class, dep.num_accelerators,
                         dep.traits) for dep in device.deployables],
        'handles': _handles(device), 'warnings': device.warnings}


def test_each_card_is_controlled_by_its_management_function():
    # The NIC and the host bridge belong to other drivers.
    found = _discover()
    golden = {
        'type': 'FPGA', 'vendor': '0x10ee',
        'model': 'Alveo U250 (golden image)',
        'control': cards.pci_info(GOLDEN), 'services': ['fpga.shell'],
        'vendor_info': {'management_function': GOLDEN, 'image': 'golden'},
        'deployables': [], 'handles': [], 'warnings': []}
    assert {address: _shape(dev) for address, dev in found.items()} == {
        U280_MGMT: _card('Alveo U280', U280_MGMT, U280_USER, '500C'),
        GOLDEN: golden,
        U50_MGMT: _card('Alveo U50', U50_MGMT, U50_USER, '5020'),
        U250_MGMT: _card('Alveo U250', U250_MGMT, U250_USER, '5004'),
    }
    assert found[GOLDEN].offer_reason == (
        'it runs its golden (factory) image, which has no user function: '
        'flash a shell onto it (xbmgmt program --base) and cold-reboot the '
        'host')
    # The board info is the management function's.
    assert found[U250_MGMT].std_board_info['kernel_driver'] == 'xclmgmt'
    assert found[U250_MGMT].std_board_info['device_id'] == '0x5004'
    assert {dev.driver_name for dev in found.values()} == {'xilinx_fpga'}
    assert {dep.driver_name for dev in found.values()
            for dep in dev.deployables} == {'xilinx_fpga'}


def test_the_user_function_is_passed_through_not_the_management_one():
    # NOTE(tests): the observed bug: the card was offered at its
    # management function, which must stay on the host.
    handles = [h.attach_info for dev in _discover().values()
               for dep in dev.deployables for h in dep.attach_handles]
    assert {info['function'] for info in handles} == {'1'}


def test_names_are_unique_across_hosts():
    one = {dep.name for dev in _discover(host='compute-1').values()
           for dep in dev.deployables}
    two = {dep.name for dev in _discover(host='compute-2').values()
           for dep in dev.deployables}
    assert len(one) == 3 and not one & two


def test_a_lone_user_function_is_reported_with_a_warning(alveo_host):
    _unplug(alveo_host, U250_MGMT)
    found = _discover(alveo_host)
    card = found[U250_USER]
    assert card.controlpath.cpid_info == cards.pci_info(U250_USER)
    assert card.model == 'Alveo U250'
    assert card.services == []
    assert card.vendor_board_info == {'user_function': U250_USER}
    (dep,) = card.deployables
    assert dep.name == '%s_%s' % (HOST, U250_USER)
    assert 'CUSTOM_FPGA_PRODUCT_ID_5004' in dep.traits
    assert _handles(card) == [[('PCI', cards.pci_info(U250_USER))]]
    assert card.warnings == [
        'bus/pci/devices/0000:d8:00.0: no readable management function: '
        'the card cannot be programmed, and its health is read from the '
        'user function']
    assert len(found) == 4


@pytest.mark.parametrize('damage', ['unplug', 'garbage class'])
def test_a_lone_management_function_offers_nothing(alveo_host, damage):
    if damage == 'unplug':
        _unplug(alveo_host, U250_USER)
    else:
        _write(alveo_host, U250_USER, 'class', '0x12\n')
    card = _discover(alveo_host)[U250_MGMT]
    assert card.controlpath.cpid_info == cards.pci_info(U250_MGMT)
    assert card.deployables == []
    assert card.offer_reason.startswith(
        'its user function (PF1) does not read (see its warnings)')
    assert card.services == ['fpga.shell']
    assert card.warnings == [
        'bus/pci/devices/0000:d8:00.1: no readable user function: the card '
        'offers nothing to guests']


def test_damaged_optional_files_leave_the_card_whole(alveo_host):
    _write(alveo_host, U250_USER, 'numa_node', 'far\n')
    _write(alveo_host, U250_MGMT, 'subsystem_device', '\xff\n')
    os.remove(_fn(alveo_host, U280_USER, 'driver'))
    os.symlink('../../nowhere', _fn(alveo_host, U280_USER, 'driver'))
    found = _discover(alveo_host)
    card = found[U250_MGMT]
    assert _handles(card) == [[('PCI', cards.pci_info(U250_USER))]]
    # NOTE(tests): the user function's numa_node is not read: only the
    # management function's board info is reported.
    assert card.warnings == [
        'bus/pci/devices/0000:d8:00.0/subsystem_device: unreadable '
        'subsystem device']
    assert _handles(found[U280_MGMT]) == [
        [('PCI', cards.pci_info(U280_USER))]]


def test_unknown_alveo_ids_go_by_function_number(tmp_path):
    b = hosts.Builder(str(tmp_path))
    b.pci('0000:65:00.0', '0x10ee', '0x50f0', '0x120000', driver='xclmgmt')
    b.pci('0000:65:00.1', '0x10ee', '0x50f1', '0x120000', driver='xocl')
    # Not an Alveo function: another class.
    b.pci('0000:66:00.0', '0x10ee', '0x9038', '0x058000')
    (card,) = _discover(str(tmp_path)).values()
    assert card.model == 'Xilinx 0x50f0'
    assert card.controlpath.cpid_info == cards.pci_info('0000:65:00.0')
    (dep,) = card.deployables
    assert dep.name == '%s_0000:65:00.1' % HOST
    assert 'CUSTOM_FPGA_PRODUCT_ID_50F0' in dep.traits


def test_roles():
    tree = sysfs.Sysfs(pci_hosts.committed('alveo-host'))
    roles = {str(fn.address): xilinx_fpga.role(fn)
             for fn in tree.pci_functions if xilinx_fpga.is_alveo(fn)}
    assert roles == {U280_MGMT: 'management', U280_USER: 'user',
                     GOLDEN: 'management', U50_MGMT: 'management',
                     U50_USER: 'user', U250_MGMT: 'management',
                     U250_USER: 'user'}


def _image(tmp_path):
    image_path = str(tmp_path / 'shell.xsabin')
    with open(image_path, 'wb') as out:
        out.write(b'XSABIN')
    return image_path


def _program(card, image):
    with pci_hosts.privsep_in_process():
        xilinx_fpga.XilinxFpgaDriver().program(
            card, card.deployables[0] if card.deployables else None, image)


@pytest.mark.parametrize('mgmt', [U250_MGMT, GOLDEN])
def test_program_runs_xbmgmt_on_the_management_function(tmp_path, override,
                                                        mgmt):
    path, record = cards.fake_tool(tmp_path, 'xbmgmt')
    override('xbmgmt_path', path, group='fpga')
    image_path = _image(tmp_path)
    _program(_discover()[mgmt], image_path)
    assert cards.recorded_argv(record) == [
        'program', '--device', mgmt, '--base', '--image', image_path]


def test_program_failure_carries_stderr(tmp_path, override):
    path, _record = cards.fake_tool(
        tmp_path, 'xbmgmt', exit_code=1,
        stderr='ERROR: Failed to find the shell image')
    override('xbmgmt_path', path, group='fpga')
    with pytest.raises(exception.DriverError) as caught:
        _program(_discover()[U250_MGMT], _image(tmp_path))
    assert ('xbmgmt exited with 1: ERROR: Failed to find the shell image'
            in str(caught.value))
    assert 'xilinx_fpga' in str(caught.value)


def test_program_needs_the_management_function(tmp_path, override,
                                               alveo_host):
    path, record = cards.fake_tool(tmp_path, 'xbmgmt')
    override('xbmgmt_path', path, group='fpga')
    _unplug(alveo_host, U250_MGMT)
    card = _discover(alveo_host)[U250_USER]
    with pytest.raises(exception.DriverError, match='not a management'):
        _program(card, _image(tmp_path))
    assert not os.path.exists(record)


def test_health_reads_the_management_function(alveo_host, override):
    override('sysfs_root', alveo_host, group='agent')
    driver = xilinx_fpga.XilinxFpgaDriver()
    card = _discover(alveo_host)[U250_MGMT]
    assert driver.health(card).ok
    _write(alveo_host, U250_USER, 'vendor', '0xffff\n')
    assert driver.health(card).ok
    _write(alveo_host, U250_MGMT, 'vendor', '0xffff\n')
    health = driver.health(card)
    assert not health.ok and U250_MGMT in health.reason


def test_agent_reports_the_cards(alveo_host, override):
    override('sysfs_root', alveo_host, group='agent')
    tracker = resource_tracker.ResourceTracker(HOST, ['xilinx_fpga_driver'])
    host_report, failed = tracker.discover()
    assert failed == []
    assert [dev.fault for dev in host_report.devices] == [None] * 4
