"""Tests of the Intel QAT driver: VFs, services, health, VF creation."""

import os

import pytest

from cyborg import exception
from cyborg.agent import resource_tracker
from cyborg.drivers import base
from cyborg.drivers import intel_qat
from cyborg.tests import sysfs_builder
from cyborg.tests.fixtures import pci_hosts

HOST = pci_hosts.committed('qat-host')
CRYPTO_PF, DC_PF = '0000:3d:00.0', '0000:3f:00.0'
FIRST_VF = '0000:3d:01.0'


def _devices(root, host='compute-1'):
    devices = pci_hosts.discover(intel_qat.IntelQatDriver(), root, host)
    pci_hosts.check_report(host, devices)
    return pci_hosts.by_address(devices)


def _fn_path(root, address, *parts):
    return os.path.join(root, 'bus', 'pci', 'devices', address, *parts)


def _write(root, address, name, value):
    with open(_fn_path(root, address, name), 'w') as out:
        out.write(value)


def _read(root, address, name):
    with open(_fn_path(root, address, name)) as handle:
        return handle.read().strip()


def test_reports_one_deployable_per_pf():
    found = _devices(HOST)
    assert sorted(found) == [CRYPTO_PF, DC_PF]
    crypto = found[CRYPTO_PF]
    assert (crypto.type, crypto.vendor, crypto.model) == ('QAT', '0x8086',
                                                          'C62x')
    assert crypto.driver_name == 'intel_qat'
    assert crypto.services == ['crypto.asym', 'crypto.sym']
    (dep,) = crypto.deployables
    assert dep.name == 'compute-1_0000:3d:00.0'
    assert (dep.num_accelerators, dep.resource_class) == (16, 'CUSTOM_QAT')
    assert dep.traits == ['CUSTOM_QAT', 'CUSTOM_QAT_CRYPTO_ASYM',
                          'CUSTOM_QAT_CRYPTO_SYM',
                          'CUSTOM_QAT_PRODUCT_ID_37C8', 'OWNER_CYBORG']
    assert dep.attach_handles[0].attach_info == {
        'domain': '0000', 'bus': '3d', 'device': '01', 'function': '0'}
    assert {h.attach_info['device'] for h in dep.attach_handles} == {'01',
                                                                      '02'}
    assert crypto.controlpath.cpid_info['bus'] == '3d'


def test_pf_without_vfs_is_passed_through_whole():
    dc = _devices(HOST)[DC_PF]
    assert dc.services == ['compression']
    (dep,) = dc.deployables
    assert dep.num_accelerators == 1
    assert dep.attach_handles[0].attach_info == {
        'domain': '0000', 'bus': '3f', 'device': '00', 'function': '0'}
    assert 'CUSTOM_QAT_COMPRESSION' in dep.traits
    assert dc.std_board_info['numa_node'] == 1


def test_names_are_unique_across_hosts():
    names = [{dep.name for dev in _devices(HOST, host).values()
              for dep in dev.deployables}
             for host in ('compute-1', 'compute-2')]
    assert len(names[0]) == 2
    assert not names[0] & names[1]


def _single_pf(root, cfg_services=None, device='0x37c8', vf_device='0x37c9'):
    sysfs = sysfs_builder.SysfsBuilder(root)
    sysfs.pci('0000:b1:00.0', '0x8086', device, '0x0b4000', driver='qat',
              totalvfs=4, numvfs=0)
    sysfs.vfs('0000:b1:00.0', ['0000:b1:00.1', '0000:b1:00.2'], '0x8086',
              vf_device, '0x0b4000', driver='qatvf')
    if cfg_services is not None:
        sysfs.qat('0000:b1:00.0', cfg_services)
    return root


@pytest.mark.parametrize('cfg_services, expected', [
    ('sym;asym', ['crypto.asym', 'crypto.sym']),
    ('asym;sym', ['crypto.asym', 'crypto.sym']),
    ('dc', ['compression']),
    ('dcc', ['compression']),
    ('sym;dc', ['compression', 'crypto.sym']),
    ('asym;dc', ['compression', 'crypto.asym']),
    ('sym', ['crypto.sym']),
    ('asym', ['crypto.asym']),
    ('sym;decomp', ['crypto.sym']),
    (None, ['compression', 'crypto.asym', 'crypto.sym']),
])
def test_services_follow_cfg_services(tmp_path, cfg_services, expected):
    (dev,) = _devices(_single_pf(tmp_path, cfg_services)).values()
    assert dev.services == expected
    traits = dev.deployables[0].traits
    assert sorted(t for t in traits if t.startswith('CUSTOM_QAT_')
                  and 'PRODUCT' not in t) == sorted(
        'CUSTOM_QAT_' + s.upper().replace('.', '_') for s in expected)
    assert dev.deployables[0].num_accelerators == 2


@pytest.mark.parametrize('damage', ['directory', 'binary', 'unknown only'])
def test_unreadable_cfg_services_skips_that_pf(tmp_path, caplog, damage):
    root = pci_hosts.copy_host('qat-host', tmp_path / 'sys')
    path = _fn_path(root, CRYPTO_PF, 'qat', 'cfg_services')
    os.remove(path)
    if damage == 'directory':
        os.mkdir(path)
    else:
        with open(path, 'wb') as out:
            out.write(b'\xff\xfe' if damage == 'binary' else b'decomp\n')
    assert sorted(_devices(root)) == [DC_PF]
    assert 'intel_qat: skipping <PciFunction %s' % CRYPTO_PF in caplog.text


def _relink(root, address, name, target):
    link = _fn_path(root, address, name)
    os.remove(link)
    os.symlink(target, link)


def test_dangling_virtfn_skips_that_pf(tmp_path, caplog):
    root = pci_hosts.copy_host('qat-host', tmp_path / 'sys')
    _relink(root, CRYPTO_PF, 'virtfn3', '../0000:3d:07.7')
    assert sorted(_devices(root)) == [DC_PF]
    assert 'virtfn link to 0000:3d:07.7' in caplog.text


def test_dangling_physfn_of_a_vf_skips_that_pf(tmp_path, caplog):
    root = pci_hosts.copy_host('qat-host', tmp_path / 'sys')
    _relink(root, FIRST_VF, 'physfn', '../0000:3d:07.7')
    assert sorted(_devices(root)) == [DC_PF]
    assert 'virtfn link to %s' % FIRST_VF in caplog.text


def test_vf_of_another_kind_skips_that_pf(tmp_path, caplog):
    _single_pf(tmp_path, 'dc', vf_device='0x0443')
    assert _devices(tmp_path) == {}
    assert 'has device id 0443, not 37c9' in caplog.text


def test_malformed_pf_entries_skip_only_that_pf(tmp_path, caplog):
    root = pci_hosts.copy_host('qat-host', tmp_path / 'sys')
    _write(root, DC_PF, 'numa_node', 'many\n')
    assert sorted(_devices(root)) == [CRYPTO_PF]
    assert 'intel_qat: skipping <PciFunction %s' % DC_PF in caplog.text


def test_extra_device_ids(override, tmp_path):
    override('extra_device_ids', {'0x4946': '4947'}, group='intel_qat')
    _single_pf(tmp_path, 'sym', device='0x4946', vf_device='0x4947')
    (dev,) = _devices(tmp_path).values()
    assert dev.model == 'QAT 4946'
    assert 'CUSTOM_QAT_PRODUCT_ID_4946' in dev.deployables[0].traits


def test_unknown_ids_are_not_claimed(tmp_path):
    _single_pf(tmp_path, 'sym', device='0x4946', vf_device='0x4947')
    assert _devices(tmp_path) == {}


@pytest.mark.parametrize('extra', [{'4946': 'x'}, {'0x49460': '4947'}])
def test_bad_extra_device_ids_stop_the_driver(override, extra):
    override('extra_device_ids', extra, group='intel_qat')
    with pytest.raises(exception.ConfigError,
                       match=r'^\[intel_qat\] extra_device_ids: '):
        intel_qat.IntelQatDriver()


# --- health and install on a copy of the tree. ------------------------------

@pytest.fixture
def qat(override, tmp_path):
    root = pci_hosts.copy_host('qat-host', tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    driver = intel_qat.IntelQatDriver()
    found = pci_hosts.by_address(pci_hosts.discover(driver, root))
    with pci_hosts.privsep_in_process():
        yield root, driver, found


def test_health_follows_qat_state(qat):
    root, driver, found = qat
    assert driver.health(found[CRYPTO_PF]) == base.HEALTHY
    _write(root, CRYPTO_PF, os.path.join('qat', 'state'), 'down\n')
    assert driver.health(found[CRYPTO_PF]) == base.Health(False, 'down')
    os.remove(_fn_path(root, CRYPTO_PF, 'qat', 'state'))
    assert driver.health(found[CRYPTO_PF]) == base.Health(
        False, 'qat/state is unreadable')


def test_health_without_qat_dir_is_ok(qat):
    root, driver, found = qat
    for name in ('state', 'cfg_services'):
        os.remove(_fn_path(root, DC_PF, 'qat', name))
    os.rmdir(_fn_path(root, DC_PF, 'qat'))
    assert driver.health(found[DC_PF]) == base.HEALTHY


def test_unreachable_pf_is_a_fault(qat):
    root, driver, found = qat
    _write(root, DC_PF, 'vendor', '0xffff\n')
    health = driver.health(found[DC_PF])
    assert not health.ok and '0xffff' in health.reason


def test_agent_records_the_state_as_fault(qat):
    root, _driver, _found = qat
    _write(root, DC_PF, os.path.join('qat', 'state'), 'down\n')
    tracker = resource_tracker.ResourceTracker('compute-1',
                                               ['intel_qat_driver'])
    host_report, failed = tracker.discover()
    assert failed == []
    faults = {addr: dev.fault for addr, dev in pci_hosts.by_address(
        host_report.devices).items()}
    assert faults == {CRYPTO_PF: None, DC_PF: 'down'}


def test_install_creates_vfs_once(qat):
    root, driver, found = qat
    driver.install(found[DC_PF])
    assert _read(root, DC_PF, 'sriov_numvfs') == '16'
    _write(root, DC_PF, 'sriov_numvfs', '4\n')
    driver.install(found[DC_PF])
    assert _read(root, DC_PF, 'sriov_numvfs') == '4'
    driver.install(found[CRYPTO_PF])
    assert _read(root, CRYPTO_PF, 'sriov_numvfs') == '16'


def test_install_respects_create_vfs(qat, override):
    root, driver, found = qat
    override('create_vfs', False, group='intel_qat')
    driver.install(found[DC_PF])
    assert _read(root, DC_PF, 'sriov_numvfs') == '0'


def test_install_without_sriov_does_nothing(qat):
    root, driver, found = qat
    for name in ('sriov_totalvfs', 'sriov_numvfs'):
        os.remove(_fn_path(root, DC_PF, name))
    driver.install(found[DC_PF])
    assert not os.path.exists(_fn_path(root, DC_PF, 'sriov_numvfs'))


def test_install_with_garbage_sriov_fails(qat):
    root, driver, found = qat
    _write(root, DC_PF, 'sriov_totalvfs', 'lots\n')
    with pytest.raises(exception.DriverError, match='sriov_totalvfs'):
        driver.install(found[DC_PF])
