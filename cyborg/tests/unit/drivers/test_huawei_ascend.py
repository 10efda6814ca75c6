"""Tests of the Huawei Ascend driver: names, resource class, health."""

import os

import pytest

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import huawei_ascend
from cyborg.tests import sysfs_builder
from cyborg.tests.fixtures import pci_hosts

HOST = pci_hosts.committed('ascend-host')
CARD0, CARD1 = '0000:01:00.0', '0000:81:00.0'


def _devices(root, host='compute-1'):
    devices = pci_hosts.discover(huawei_ascend.HuaweiAscendDriver(), root,
                                 host)
    pci_hosts.check_report(host, devices)
    return pci_hosts.by_address(devices)


def test_reports_each_card():
    found = _devices(HOST)
    assert sorted(found) == [CARD0, CARD1]
    card = found[CARD1]
    assert (card.type, card.vendor, card.model) == ('AICHIP', '0x19e5',
                                                    'Ascend 310')
    assert card.services == ['npu.compute']
    assert card.driver_name == 'huawei_ascend'
    assert card.std_board_info['numa_node'] == 1
    (dep,) = card.deployables
    assert dep.name == 'compute-1_0000:81:00.0'
    assert (dep.num_accelerators, dep.resource_class) == (1, 'CUSTOM_NPU')
    assert dep.traits == ['CUSTOM_NPU_HUAWEI', 'CUSTOM_NPU_PRODUCT_ID_D100',
                          'OWNER_CYBORG']
    (handle,) = dep.attach_handles
    assert (handle.attach_type, handle.attach_info) == ('PCI', {
        'domain': '0000', 'bus': '81', 'device': '00', 'function': '0'})


def test_names_are_unique_across_hosts():
    # NOTE(tests): upstream named deployables without the host, so two
    # hosts with a card at the same address collided in Placement.
    names = [{dep.name for dev in _devices(HOST, host).values()
              for dep in dev.deployables}
             for host in ('compute-1', 'compute-2')]
    assert len(names[0]) == 2
    assert not names[0] & names[1]


@pytest.mark.parametrize('value, expected', [
    ('CUSTOM_NPU', 'CUSTOM_NPU'),
    ('npu_310', 'CUSTOM_NPU_310'),
    ('CUSTOM_ASCEND', 'CUSTOM_ASCEND'),
])
def test_resource_class_is_configurable(override, value, expected):
    override('resource_class', value, group='huawei_ascend')
    for dev in _devices(HOST).values():
        assert dev.deployables[0].resource_class == expected


@pytest.mark.parametrize('option, value', [
    ('resource_class', 'npu 310'),
    ('resource_class', ''),
    ('device_ids', ['d100', 'zz']),
    ('device_ids', ['0x1d100']),
])
def test_bad_options_stop_the_driver(override, option, value):
    override(option, value, group='huawei_ascend')
    with pytest.raises(exception.ConfigError,
                       match=r'^\[huawei_ascend\] %s: ' % option):
        huawei_ascend.HuaweiAscendDriver()


def test_device_ids_are_configurable(override):
    override('device_ids', ['0xD100'], group='huawei_ascend')
    assert sorted(_devices(HOST)) == [CARD0, CARD1]
    override('device_ids', ['d500'], group='huawei_ascend')
    assert _devices(HOST) == {}


def test_models_of_known_ids(tmp_path):
    sysfs = sysfs_builder.SysfsBuilder(tmp_path)
    for bus, device in (('01', '0xd500'), ('02', '0xd801'), ('03', '0xd802'),
                        ('04', '0xd107')):
        sysfs.pci('0000:%s:00.0' % bus, '0x19e5', device, '0x120000')
    found = _devices(tmp_path)
    assert {addr: dev.model for addr, dev in found.items()} == {
        '0000:01:00.0': 'Ascend 310P', '0000:02:00.0': 'Ascend 910',
        '0000:03:00.0': 'Ascend 910B'}


def test_a_malformed_optional_file_leaves_its_field_unknown(tmp_path,
                                                           caplog):
    root = pci_hosts.copy_host('ascend-host', tmp_path / 'sys')
    with open(os.path.join(root, 'bus', 'pci', 'devices', CARD0,
                           'numa_node'), 'w') as out:
        out.write('zero\n')
    found = _devices(root)
    assert sorted(found) == [CARD0, CARD1]
    assert 'numa_node' not in found[CARD0].std_board_info
    warning = ("bus/pci/devices/%s/numa_node: numa node 'zero' does not "
               "parse" % CARD0)
    assert found[CARD0].warnings == [warning]
    assert found[CARD1].warnings == []
    assert warning in caplog.text


def test_a_card_whose_identity_does_not_read_is_left_out(tmp_path, caplog):
    root = pci_hosts.copy_host('ascend-host', tmp_path / 'sys')
    with open(os.path.join(root, 'bus', 'pci', 'devices', CARD0,
                           'device'), 'w') as out:
        out.write('zero\n')
    assert sorted(_devices(root)) == [CARD1]
    assert 'bus/pci/devices/%s' % CARD0 in caplog.text


def test_health_faults_only_unreachable_cards(override, tmp_path):
    root = pci_hosts.copy_host('ascend-host', tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    driver = huawei_ascend.HuaweiAscendDriver()
    found = _devices(root)
    assert driver.health(found[CARD0]).state == base.OK
    with open(os.path.join(root, 'bus', 'pci', 'devices', CARD0, 'vendor'),
              'w') as out:
        out.write('0xffff\n')
    health = driver.health(found[CARD0])
    assert not health.ok and CARD0 in health.reason
