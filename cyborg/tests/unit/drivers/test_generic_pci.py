"""Tests of the generic PCI driver: specs, discovery, binding, health."""

import json
import os

from oslo_config import cfg
import pytest

from cyborg import exception
from cyborg.agent import resource_tracker
from cyborg.conf import generic as generic_conf
from cyborg.conf import pci as pci_conf
from cyborg.drivers import base
from cyborg.drivers import generic_pci
from cyborg.drivers import sysfs
from cyborg.tests.fixtures import accelerator_hosts
from cyborg.tests.fixtures import pci_hosts

HOST = pci_hosts.committed('pci-host')
NIC_PF, NIC_VF0, NIC_VF1 = '0000:3b:00.0', '0000:3b:02.0', '0000:3b:02.1'
NVME, GAUDI = '0000:5e:00.0', '0000:d8:00.0'
EVERYTHING = [{'vendor_id': '*'}]


def _driver(override, *specs):
    override('device_spec', [json.dumps(spec) for spec in specs],
             group='pci')
    return generic_pci.PciDriver()


def _claimed(override, root, *specs):
    return sorted(pci_hosts.by_address(
        pci_hosts.discover(_driver(override, *specs), root)))


@pytest.fixture(autouse=True)
def _fresh_log():
    sysfs.forget_logged()


def test_reports_each_claimed_function(override):
    devices = pci_hosts.discover(_driver(override, *EVERYTHING), HOST)
    pci_hosts.check_report('compute-1', devices)
    found = pci_hosts.by_address(devices)
    # NOTE(tests): the T4 is the NVIDIA driver's, the host bridge the
    # platform's.
    assert sorted(found) == [NIC_PF, NIC_VF0, NIC_VF1, NVME, GAUDI]
    # NOTE(tests): the type follows the PCI class (upstream said GPU).
    assert {addr: dev.type for addr, dev in found.items()} == {
        NIC_PF: 'NIC', NIC_VF0: 'NIC', NIC_VF1: 'NIC', NVME: 'NVME',
        GAUDI: 'AICHIP'}
    nvme = found[NVME]
    assert (nvme.vendor, nvme.model) == ('0x144d', '144d:a808')
    assert nvme.services == ['pci.passthrough']
    assert nvme.driver_name == 'pci'
    assert nvme.std_board_info['kernel_driver'] == 'nvme'
    (dep,) = nvme.deployables
    assert dep.name == 'compute-1_0000:5e:00.0'
    assert (dep.num_accelerators, dep.resource_class) == (1, 'CUSTOM_PCI')
    assert dep.traits == ['CUSTOM_PCI_144D', 'CUSTOM_PCI_PRODUCT_ID_A808',
                          'OWNER_CYBORG']
    (handle,) = dep.attach_handles
    assert handle.attach_type == 'PCI'
    assert handle.attach_info == {'domain': '0000', 'bus': '5e',
                                  'device': '00', 'function': '0'}
    assert 'CUSTOM_PCI_INTEL' in found[NIC_PF].deployables[0].traits
    assert [dev.warnings for dev in found.values()] == [[]] * 5


def test_names_are_unique_across_hosts(override):
    driver = _driver(override, *EVERYTHING)
    names = [{dep.name for dev in pci_hosts.discover(driver, HOST, host)
              for dep in dev.deployables}
             for host in ('compute-1', 'compute-2')]
    assert len(names[0]) == 5
    assert not names[0] & names[1]


@pytest.mark.parametrize('specs, expected', [
    ([{'vendor_id': '0x8086', 'product_id': '154C'}], [NIC_VF0, NIC_VF1]),
    ([{'vendor_id': '8086', 'product_id': '*'}], [NIC_PF, NIC_VF0, NIC_VF1]),
    ([{'product_id': '0xa808'}], [NVME]),
    ([{'address': '0000:3b:*.*'}], [NIC_PF, NIC_VF0, NIC_VF1]),
    ([{'address': '3b:02.1'}], [NIC_VF1]),
    ([{'address': '*:d8:00'}], [GAUDI]),
    ([{'address': ':5e:'}], [NVME]),
    ([{'address': '0000:3b:0?.0'}], [NIC_PF, NIC_VF0]),
    ([{'address': '5E:0.0'}], [NVME]),
    ([{'address': {'bus': '3b', 'slot': '02', 'function': '[1-7]'}}],
     [NIC_VF1]),
    ([{'address': {'domain': '0000', 'bus': '(5e|d8)'}}], [NVME, GAUDI]),
    ([{'class_id': '0108'}], [NVME]),
    ([{'class_id': '12'}], [GAUDI]),
    # NOTE(tests): the NVIDIA driver owns the T4, whatever the spec says.
    ([{'class_id': '0x030200'}], []),
    ([{'address': '*:af:00'}], []),
    ([{'class_id': '02', 'address': '*:*:00.*'}], [NIC_PF]),
    ([{'vendor_id': '10de', 'class_id': '01'}], []),
    ([{'class_id': '0108'}, {'vendor_id': '1da3'}], [NVME, GAUDI]),
    # NOTE(tests): bridges are never claimed, however broad the spec.
    ([{'vendor_id': '8086'}], [NIC_PF, NIC_VF0, NIC_VF1]),
    ([{'class_id': '06'}], []),
])
def test_spec_matching(override, specs, expected):
    assert _claimed(override, HOST, *specs) == expected


def test_one_value_may_hold_a_list_of_specs(override):
    override('device_spec', ['[{"class_id": "0108"}, {"class_id": "12"}]'],
             group='pci')
    found = pci_hosts.discover(generic_pci.PciDriver(), HOST)
    assert sorted(pci_hosts.by_address(found)) == [NVME, GAUDI]


def test_devname_matches_a_network_interface(override, tmp_path):
    root = pci_hosts.copy_host('pci-host', tmp_path / 'sys')
    os.makedirs(os.path.join(root, 'bus', 'pci', 'devices', NIC_PF, 'net',
                             'ens1f0'))
    assert _claimed(override, root, {'devname': 'ens1f0'}) == [NIC_PF]
    assert _claimed(override, root, {'devname': 'ens9'}) == []


def test_first_matching_spec_sets_class_and_traits(override):
    devices = pci_hosts.discover(_driver(
        override,
        {'product_id': '154c', 'resource_class': 'CUSTOM_NIC_VF',
         'traits': ['CUSTOM_VF', 'hw_nic_sriov']},
        {'vendor_id': '8086', 'resource_class': 'nic',
         'traits': 'pf, fast'}), HOST)
    pci_hosts.check_report('compute-1', devices)
    found = pci_hosts.by_address(devices)
    vf = found[NIC_VF0].deployables[0]
    assert vf.resource_class == 'CUSTOM_NIC_VF'
    assert {'CUSTOM_VF', 'HW_NIC_SRIOV', 'OWNER_CYBORG'} <= set(vf.traits)
    pf = found[NIC_PF].deployables[0]
    assert pf.resource_class == 'CUSTOM_NIC'
    assert {'CUSTOM_PF', 'CUSTOM_FAST', 'CUSTOM_PCI_INTEL',
            'CUSTOM_PCI_PRODUCT_ID_1572'} <= set(pf.traits)


def test_no_spec_claims_nothing(override):
    assert _claimed(override, HOST) == []


@pytest.mark.parametrize('value', [
    'not json',
    '"8086"',
    '[{"vendor_id": "8086"}, 3]',
    '{}',
    '{"resource_class": "CUSTOM_PCI"}',
    '{"vendor_id": "8086", "colour": "red"}',
    '{"vendor_id": "80z6"}',
    '{"vendor_id": "123456"}',
    '{"product_id": 4242}',
    '{"class_id": "123"}',
    '{"class_id": "0x"}',
    '{"address": "0000:3b:00:00.0"}',
    '{"address": "0000:3g:00.0"}',
    '{"address": "0000:3b:00.0.1"}',
    '{"address": "00000:3b:00.0"}',
    '{"address": 5}',
    '{"address": {"bus": "("}}',
    '{"address": {"bus": "3b", "device": "00"}}',
    '{"address": {"bus": 59}}',
    '{"devname": "../eth0"}',
    '{"vendor_id": "8086", "resource_class": "bad-name!"}',
    '{"vendor_id": "8086", "resource_class": ""}',
    '{"vendor_id": "8086", "traits": ["ok", "no spaces"]}',
    '{"vendor_id": "8086", "traits": 7}',
])
def test_bad_spec_stops_the_driver(override, value):
    override('device_spec', ['{"class_id": "12"}', value], group='pci')
    with pytest.raises(exception.ConfigError) as raised:
        generic_pci.PciDriver()
    message = str(raised.value)
    assert message.startswith('[pci] device_spec: ')
    assert '\n' not in message
    assert value in message


def test_bad_spec_stops_the_agent_at_start(override):
    override('device_spec', ['{"vendor": "8086"}'], group='pci')
    with pytest.raises(exception.ConfigError) as raised:
        resource_tracker.ResourceTracker('compute-1', ['pci_driver'])
    assert '[pci] device_spec' in str(raised.value)
    assert 'unknown key(s) vendor' in str(raised.value)


def test_passthrough_whitelist_still_read(tmp_path):
    path = tmp_path / 'cyborg.conf'
    path.write_text('[pci]\npassthrough_whitelist = {"vendor_id": "8086"}\n'
                    'passthrough_whitelist = {"class_id": "12"}\n')
    conf = cfg.ConfigOpts()
    pci_conf.register_opts(conf)
    conf(['--config-file', str(path)])
    assert conf.pci.device_spec == ['{"vendor_id": "8086"}',
                                    '{"class_id": "12"}']
    assert len(generic_pci.parse_specs(conf.pci.device_spec)) == 2


def _skipped(caplog, override, root):
    devices = pci_hosts.discover(_driver(override, *EVERYTHING), root)
    pci_hosts.check_report('compute-1', devices)
    return pci_hosts.by_address(devices), caplog.text


def _relink(root, address, name, target):
    link = os.path.join(root, 'bus', 'pci', 'devices', address, name)
    os.remove(link)
    os.symlink(target, link)


def test_malformed_functions_are_left_out_alone(override, tmp_path,
                                               caplog):
    root = pci_hosts.copy_host('pci-host', tmp_path / 'sys')
    fn_dir = os.path.join(root, 'bus', 'pci', 'devices')
    os.remove(os.path.join(fn_dir, NVME, 'vendor'))
    with open(os.path.join(fn_dir, GAUDI, 'class'), 'w') as out:
        out.write('processing accelerator\n')
    found, log = _skipped(caplog, override, root)
    assert sorted(found) == [NIC_PF, NIC_VF0, NIC_VF1]
    assert NVME in log and GAUDI in log


def test_dangling_physfn_is_a_warning_of_the_vf_and_its_pf(override,
                                                          tmp_path, caplog):
    # NOTE(tests): partial truth: both functions still answer, so both are
    # passed through; what does not add up is said with each.
    root = pci_hosts.copy_host('pci-host', tmp_path / 'sys')
    _relink(root, NIC_VF1, 'physfn', '../0000:3b:07.0')
    found, _log = _skipped(caplog, override, root)
    assert sorted(found) == [NIC_PF, NIC_VF0, NIC_VF1, NVME, GAUDI]
    assert found[NIC_VF1].warnings == [
        'bus/pci/devices/0000:3b:02.1/physfn: links to 0000:3b:07.0, which '
        'is no readable PCI function']
    assert found[NIC_PF].warnings == [
        'bus/pci/devices/0000:3b:00.0/virtfn1: links to 0000:3b:02.1, which '
        'is not a VF of this function']
    assert found[NIC_VF0].warnings == []


def test_dangling_virtfn_is_a_warning_of_the_pf(override, tmp_path, caplog):
    root = pci_hosts.copy_host('pci-host', tmp_path / 'sys')
    _relink(root, NIC_PF, 'virtfn1', '../0000:3b:02.7')
    found, _log = _skipped(caplog, override, root)
    assert sorted(found) == [NIC_PF, NIC_VF0, NIC_VF1, NVME, GAUDI]
    assert found[NIC_PF].warnings == [
        'bus/pci/devices/0000:3b:00.0/virtfn1: links to 0000:3b:02.7, which '
        'is no readable PCI function']


# --- install / uninstall on a copy of the tree. -----------------------------

@pytest.fixture
def bound(override, tmp_path):
    """A copy of pci-host as the agent's sysfs, and its reported devices.

    Its second NIC VF is on vfio-pci, as a guest's.
    """
    root = pci_hosts.copy_host('pci-host', tmp_path / 'sys')
    accelerator_hosts.Builder(root).bind(NIC_VF1, 'vfio-pci', override=True)
    override('sysfs_root', root, group='agent')
    driver = _driver(override, *EVERYTHING)
    found = pci_hosts.by_address(pci_hosts.discover(driver, root))
    with pci_hosts.privsep_in_process():
        yield root, driver, found


def _file(root, *parts):
    path = os.path.join(root, *parts)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read()


def _kernel_rebinds(root, address, driver):
    """What the kernel does on drivers_probe: rebind and consume the files.
    """
    drv = os.path.join(root, 'bus', 'pci', 'drivers', driver)
    os.makedirs(drv, exist_ok=True)
    device_dir = os.path.realpath(
        os.path.join(root, 'bus', 'pci', 'devices', address))
    _relink(root, address, 'driver', os.path.relpath(drv, device_dir))
    for path in (('bus', 'pci', 'drivers_probe'),
                 ('bus', 'pci', 'drivers', 'nvme', 'unbind')):
        os.remove(os.path.join(root, *path))


def test_install_binds_vfio_pci_once(bound):
    root, driver, found = bound
    driver.install(found[NVME])
    device_dir = ('bus', 'pci', 'devices', NVME)
    assert _file(root, *device_dir, 'driver_override') == 'vfio-pci'
    assert _file(root, 'bus', 'pci', 'drivers', 'nvme', 'unbind') == NVME
    assert _file(root, 'bus', 'pci', 'drivers_probe') == NVME
    _kernel_rebinds(root, NVME, 'vfio-pci')
    driver.install(found[NVME])
    assert _file(root, 'bus', 'pci', 'drivers_probe') is None
    assert _file(root, *device_dir, 'driver_override') == 'vfio-pci'


def test_install_leaves_a_vfio_bound_function_alone(bound):
    root, driver, found = bound
    driver.install(found[NIC_VF1])
    assert _file(root, 'bus', 'pci', 'drivers_probe') is None
    assert _file(root, 'bus', 'pci', 'drivers', 'vfio-pci', 'unbind') is None


def test_install_probes_an_unbound_function(bound):
    root, driver, found = bound
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', GAUDI, 'driver'))
    driver.install(found[GAUDI])
    assert _file(root, 'bus', 'pci', 'drivers_probe') == GAUDI
    assert _file(root, 'bus', 'pci', 'drivers', 'habanalabs',
                 'unbind') is None


def test_uninstall_clears_driver_override(bound):
    root, driver, found = bound
    override_file = ('bus', 'pci', 'devices', NIC_VF1, 'driver_override')
    driver.uninstall(found[NIC_VF1])
    assert _file(root, *override_file) == '\n'
    with open(os.path.join(root, *override_file), 'w') as out:
        out.write('(null)\n')
    driver.uninstall(found[NIC_VF1])
    assert _file(root, *override_file) == '(null)\n'
    driver.uninstall(found[NVME])
    assert _file(root, 'bus', 'pci', 'devices', NVME,
                 'driver_override') is None


def test_install_of_a_vanished_function_fails(bound):
    root, driver, found = bound
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', NVME))
    with pytest.raises(exception.DriverError, match='not in sysfs'):
        driver.install(found[NVME])


# --- health. ----------------------------------------------------------------

def _write(root, address, name, value):
    with open(os.path.join(root, 'bus', 'pci', 'devices', address, name),
              'w') as out:
        out.write(value)


def test_idle_functions_are_healthy(bound):
    root, driver, found = bound
    _write(root, NVME, 'enable', '0\n')
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', NVME, 'driver'))
    assert driver.health(found[NVME]).state == base.OK


def test_unreadable_config_space_is_a_fault(bound):
    root, driver, found = bound
    _write(root, NVME, 'vendor', '0xffff\n')
    health = driver.health(found[NVME])
    assert not health.ok and '0xffff' in health.reason
    assert driver.health(found[GAUDI]).state == base.OK
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', GAUDI))
    assert 'gone' in driver.health(found[GAUDI]).reason


def test_vfs_are_judged_by_their_pf(bound):
    # NOTE(tests): a VF's own config space reads all ones for its ids.
    root, driver, found = bound
    assert driver.health(found[NIC_VF0]).state == base.OK
    _write(root, NIC_PF, 'vendor', '0xffff\n')
    health = driver.health(found[NIC_VF0])
    assert not health.ok and NIC_PF in health.reason
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', NIC_VF1))
    assert 'gone' in driver.health(found[NIC_VF1]).reason


def test_agent_finds_the_simulated_host_healthy(bound):
    tracker = resource_tracker.ResourceTracker('compute-1', ['pci_driver'])
    host_report, failed = tracker.discover()
    assert failed == []
    assert len(host_report.devices) == 5
    assert [dev.fault for dev in host_report.devices] == [None] * 5


def test_agent_records_the_fault(bound, override):
    root, _driver_unused, _found = bound
    override('device_spec', ['{"class_id": "01"}'], group='pci')
    _write(root, NVME, 'vendor', '0xffff\n')
    tracker = resource_tracker.ResourceTracker('compute-1', ['pci_driver'])
    host_report, failed = tracker.discover()
    assert failed == []
    (device,) = host_report.devices
    assert NVME in device.fault and '0xffff' in device.fault


# --- What is never claimed: the platform and the specific drivers' cards. ---

PLATFORM = pci_hosts.committed('platform-host')
P_NVME, P_NIC, P_GAUDI = '0000:01:00.0', '0000:18:00.0', '0000:d8:00.0'
P_VFS = ['0000:18:02.0', '0000:18:02.1']
#: Every function of platform-host no spec may claim, and why.
REFUSED = {
    '0000:00:00.0': 'class 060000 belongs to the platform',
    '0000:00:14.0': 'a chipset function on bus 00',
    '0000:00:16.0': 'a chipset function on bus 00',
    '0000:00:17.0': 'a chipset function on bus 00',
    '0000:00:1c.0': 'class 060400 belongs to the platform',
    '0000:00:1f.0': 'class 060100 belongs to the platform',
    '0000:00:1f.2': 'a chipset function on bus 00',
    '0000:00:1f.4': 'class 0c0500 belongs to the platform',
    '0000:00:1f.5': 'a chipset function on bus 00',
    '0000:17:00.0': 'class 060400 belongs to the platform',
    '0000:17:05.0': "a system peripheral of the CPU's (class 088000)",
    '0000:17:05.4': 'class 080020 belongs to the platform',
    '0000:3a:00.0': 'class 060400 belongs to the platform',
    '0000:3b:00.0': 'the nvidia_gpu driver owns it',
    '0000:5d:00.0': 'class 060400 belongs to the platform',
    '0000:5e:00.0': 'the intel_qat driver owns it',
    '0000:5e:01.0': 'the intel_qat driver owns it',
    '0000:5e:01.1': 'the intel_qat driver owns it',
    '0000:85:00.0': 'class 060400 belongs to the platform',
    '0000:86:00.0': 'the intel_fpga driver owns it',
    '0000:86:00.1': 'the intel_fpga driver owns it',
    '0000:ae:00.0': 'class 060400 belongs to the platform',
    '0000:af:00.0': 'the xilinx_fpga driver owns it',
    '0000:af:00.1': 'the xilinx_fpga driver owns it',
    '0000:d7:00.0': 'class 060400 belongs to the platform',
}


def test_platform_host_offers_only_what_no_one_else_has(override, caplog):
    caplog.set_level('INFO')
    found = _claimed(override, PLATFORM, *EVERYTHING)
    assert found == sorted([P_NVME, P_NIC, *P_VFS, P_GAUDI])
    refused = {}
    for record in caplog.records:
        if record.name == generic_pci.__name__ and 'not claimed' in \
                record.getMessage():
            address, reason = record.args[1:]
            refused[str(address)] = reason
    # NOTE(tests): no spec matches a bridge in the first place
    # (pci.first_match); the rest is matched, then refused with a reason.
    assert refused == {address: reason for address, reason in REFUSED.items()
                       if not reason.startswith('class 06')}
    tree = sysfs.Sysfs(PLATFORM)
    assert {address: generic_pci.platform_reason(tree.pci_function(address))
            for address, reason in REFUSED.items()
            if not reason.endswith('owns it')} == {
        address: reason for address, reason in REFUSED.items()
        if not reason.endswith('owns it')}


def test_refusals_are_logged_once(override, caplog):
    caplog.set_level('INFO')
    driver = _driver(override, {'address': '0000:00:17.0'})
    for _ in range(3):
        assert pci_hosts.discover(driver, PLATFORM) == []
    assert caplog.text.count('0000:00:17.0 but is not claimed') == 1


@pytest.mark.parametrize('spec, expected', [
    ({'class_id': '06'}, []),
    ({'class_id': '0604'}, []),
    ({'class_id': '0c05'}, []),
    ({'class_id': '08'}, []),
    ({'class_id': '0106'}, []),
    ({'class_id': '0108'}, [P_NVME]),
    ({'address': '0000:00:*.*'}, []),
    ({'address': '0000:17:*.*'}, []),
    ({'vendor_id': '8086'}, [P_NIC, *P_VFS]),
    ({'vendor_id': '10de'}, []),
    ({'vendor_id': '10ee'}, []),
    ({'class_id': '0b40'}, []),
    ({'class_id': '12'}, [P_GAUDI]),
])
def test_platform_host_spec_matching(override, spec, expected):
    assert _claimed(override, PLATFORM, spec) == expected


def test_a_port_with_a_wrong_class_is_still_a_bridge(override, tmp_path):
    root = pci_hosts.copy_host('platform-host', tmp_path / 'sys')
    _write(root, '0000:17:00.0', 'class', '0x020000\n')
    tree = sysfs.Sysfs(root)
    assert generic_pci.platform_reason(
        tree.pci_function('0000:17:00.0')) == 'PCI functions sit behind it'
    assert _claimed(override, root, {'address': '0000:17:*.*'}) == []


def _owners(root=PLATFORM):
    tree = sysfs.Sysfs(root)
    owners = generic_pci.Owners(tree)
    return {str(fn.address): owners.of(fn) for fn in tree.pci_functions
            if owners.of(fn)}


def test_owners_follow_the_specific_drivers():
    assert _owners() == {
        address: reason.split()[1] for address, reason in REFUSED.items()
        if reason.endswith('owns it')}


def test_owners_follow_the_drivers_options(override, tmp_path):
    b = accelerator_hosts.Builder(str(tmp_path))
    b.pci('0000:01:00.0', '0x19e5', '0xd100', '0x120000')
    b.pci('0000:02:00.0', '0x19e5', '0xd999', '0x120000')
    b.pci('0000:03:00.0', '0x8086', '0xffe0', '0x0b4000', totalvfs=1)
    b.vfs('0000:03:00.0', ['0000:03:00.1'], '0x8086', '0xffe1', '0x0b4000')
    b.pci('0000:04:00.0', '0x1da3', '0x1000', '0x120000')
    assert _owners(str(tmp_path)) == {'0000:01:00.0': 'huawei_ascend'}
    override('device_ids', ['d999'], group='huawei_ascend')
    override('extra_device_ids', {'ffe0': 'ffe1'}, group='intel_qat')
    override('backends', ['gaudi'], group='generic_driver')
    generic_conf.register_dynamic_opts(cfg.CONF)
    override('vendor_id', '1da3', group='generic_backend_gaudi')
    assert _owners(str(tmp_path)) == {
        '0000:02:00.0': 'huawei_ascend', '0000:03:00.0': 'intel_qat',
        '0000:03:00.1': 'intel_qat', '0000:04:00.0': 'generic'}
    # Options that do not parse leave the built-in rules.
    override('extra_device_ids', {'ffe0': 'x'}, group='intel_qat')
    override('device_ids', ['zz', 'd100'], group='huawei_ascend')
    assert _owners(str(tmp_path)) == {
        '0000:01:00.0': 'huawei_ascend', '0000:04:00.0': 'generic'}


def test_every_driver_at_once_claims_each_function_once(override):
    # NOTE(tests): what the agent runs: the generic PCI driver next to the
    # specific ones, with a spec that matches everything.
    override('device_spec', [json.dumps(spec) for spec in EVERYTHING],
             group='pci')
    for host in ('platform-host', 'pci-host', 'alveo-host', 'qat-c6xx-host',
                 'qat-4xxx-host'):
        override('sysfs_root', pci_hosts.committed(host), group='agent')
        tracker = resource_tracker.ResourceTracker('compute-1', [
            'nvidia_gpu_driver', 'intel_fpga_driver', 'xilinx_fpga_driver',
            'intel_qat_driver', 'huawei_ascend_driver', 'pci_driver'])
        host_report, failed = tracker.discover()
        assert failed == []
        handles = [h.key for dev in host_report.devices
                   for dep in dev.deployables for h in dep.attach_handles]
        assert len(handles) == len(set(handles)), host
