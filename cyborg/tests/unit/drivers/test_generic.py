"""Tests of the generic driver: backends, discovery, host operations."""

import collections
import logging
import os

from oslo_config import cfg
import pytest

from cyborg import exception
from cyborg.agent import resource_tracker
from cyborg.conf import generic as generic_conf
from cyborg.conf import opts
from cyborg.drivers import base
from cyborg.drivers import generic
from cyborg.privsep import sysfs as privsep_sysfs
from cyborg.tests.fixtures import generic_host as gh
from cyborg.tests.fixtures import gpu_fpga_hosts
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF
HOST = pci_hosts.committed(gh.NAME)
VF0, VF1 = gh.CRYPTO_VFS


def _configure(override, options):
    """Set a fixture's options as a configuration file would hold them."""
    backend_groups = {}
    for group, values in options.items():
        if group.startswith(generic_conf.BACKEND_GROUP_PREFIX):
            backend_groups[group] = values
            continue
        for name, value in values.items():
            override(name, value, group=group)
    for group, values in backend_groups.items():
        generic_conf.register_backend_group(
            CONF, group[len(generic_conf.BACKEND_GROUP_PREFIX):])
        for name, value in values.items():
            override(name, value, group=group)


def _with(options, group, **values):
    """A copy of ``options`` with ``values`` changed in ``group``."""
    changed = {name: dict(group_values)
               for name, group_values in options.items()}
    changed.setdefault(group, {}).update(values)
    return changed


def _found(override, options, root=HOST):
    _configure(override, options)
    devices = pci_hosts.discover(generic.GenericDriver(), root)
    pci_hosts.check_report('compute-1', devices)
    return pci_hosts.by_address(devices)


def _summary(devices):
    found = collections.defaultdict(list)
    for device in devices:
        for dep in device.deployables:
            found[device.type].append((dep.resource_class,
                                       dep.num_accelerators,
                                       len(dep.attach_handles)))
    return dict(found)


def test_committed_tree_equals_a_fresh_build(tmp_path):
    fresh = pci_hosts.snapshot(gh.build_generic_host(str(tmp_path)))
    # NOTE(tests): regenerate with python -m
    # cyborg.tests.fixtures.generic_host when the builder changes.
    assert pci_hosts.snapshot(HOST) == fresh


def test_is_an_installed_driver():
    assert 'generic_driver' in resource_tracker.available_drivers()
    assert (generic.GenericDriver.name,
            generic.GenericDriver.version) == ('generic', '1.0')


# --- Discovery. ------------------------------------------------------------

def test_single_backend_reports_a_pf_with_its_vfs(override):
    found = _found(override, gh.SINGLE_BACKEND_OPTIONS)
    assert _summary(found.values()) == gh.SINGLE_BACKEND_EXPECTED
    card = found[gh.CRYPTO_PF]
    assert (card.type, card.vendor, card.model) == ('QAT', '0x8086',
                                                    '8086:37c8')
    assert card.driver_name == 'generic'
    assert card.services == ['crypto.asym', 'crypto.sym']
    assert card.vendor_board_info == {'backend': 'crypto'}
    assert card.std_board_info['kernel_driver'] == 'c6xx'
    (dep,) = card.deployables
    assert dep.name == 'compute-1_%s' % gh.CRYPTO_PF
    assert dep.traits == ['CUSTOM_CRYPTO_ASYM', 'CUSTOM_CRYPTO_SYM',
                          'OWNER_CYBORG']
    assert [h.attach_info for h in dep.attach_handles] == [
        gpu_fpga_hosts.pci_info(VF0), gpu_fpga_hosts.pci_info(VF1)]


def test_each_backend_reports_its_own_devices(override):
    found = _found(override, gh.AGENT_OPTIONS)
    assert sorted(found) == [gh.CRYPTO_PF, gh.INFERENCE]
    assert _summary(found.values()) == gh.EXPECTED
    card = found[gh.INFERENCE]
    # NOTE(tests): no device_type set: the PCI class (12) says AICHIP.
    assert card.type == 'AICHIP'
    assert card.vendor_board_info == {'backend': 'inference'}
    assert card.services == ['inference']
    (dep,) = card.deployables
    assert dep.traits == ['CUSTOM_INT8', 'OWNER_CYBORG']
    assert [h.attach_info for h in dep.attach_handles] == [
        gpu_fpga_hosts.pci_info(gh.INFERENCE)]


def test_agent_reports_the_simulated_host(override):
    _configure(override, gh.AGENT_OPTIONS)
    override('sysfs_root', HOST, group='agent')
    tracker = resource_tracker.ResourceTracker('node1')
    host_report, failed = tracker.discover()
    assert failed == []
    assert _summary(host_report.devices) == gh.EXPECTED
    assert [dev.fault for dev in host_report.devices] == [None, None]


def test_bridges_are_never_claimed(override):
    options = _with(gh.SINGLE_BACKEND_OPTIONS, 'generic_backend_crypto',
                    product_ids='')
    assert sorted(_found(override, options)) == [gh.NIC, gh.CRYPTO_PF]


def test_a_function_belongs_to_the_first_backend(override):
    options = _with(gh.AGENT_OPTIONS, 'generic_driver',
                    backends='inference,habana')
    options['generic_backend_habana'] = {'vendor_id': '1da3'}
    found = _found(override, options)
    assert found[gh.INFERENCE].vendor_board_info == {'backend': 'inference'}
    options['generic_driver']['backends'] = 'habana,inference'
    found = _found(override, options)
    assert found[gh.INFERENCE].vendor_board_info == {'backend': 'habana'}
    assert found[gh.INFERENCE].deployables[0].resource_class == (
        'CUSTOM_HABANA')


def test_vfs_are_reported_alone_only_without_their_pf(override):
    vfs_only = {'generic_driver': {'backends': 'vfs'},
                'generic_backend_vfs': {'vendor_id': '8086',
                                        'product_ids': '37c9'}}
    found = _found(override, vfs_only)
    assert sorted(found) == list(gh.CRYPTO_VFS)
    assert [len(dev.deployables[0].attach_handles)
            for dev in found.values()] == [1, 1]
    both = _with(gh.SINGLE_BACKEND_OPTIONS, 'generic_driver',
                 backends='vfs,crypto')
    both['generic_backend_vfs'] = vfs_only['generic_backend_vfs']
    found = _found(override, both)
    assert sorted(found) == [gh.CRYPTO_PF]
    assert found[gh.CRYPTO_PF].deployables[0].num_accelerators == 2


def test_no_backend_claims_nothing(override, caplog):
    caplog.set_level(logging.INFO)
    assert _found(override, {'generic_driver': {'backends': ''}}) == {}
    assert '[generic_driver] backends is empty' in caplog.text


def test_a_dangling_virtfn_loses_that_vf_only(override, tmp_path, caplog):
    root = pci_hosts.copy_host(gh.NAME, tmp_path / 'sys')
    link = os.path.join(root, 'bus', 'pci', 'devices', gh.CRYPTO_PF,
                        'virtfn1')
    os.remove(link)
    os.symlink('../0000:3d:01.7', link)
    found = _found(override, gh.AGENT_OPTIONS, root)
    assert sorted(found) == [gh.CRYPTO_PF, gh.INFERENCE]
    crypto = found[gh.CRYPTO_PF]
    (deployable,) = crypto.deployables
    assert deployable.num_accelerators == 1
    assert [h.attach_info['function'] for h in deployable.attach_handles
            ] == ['0']
    warning = ('bus/pci/devices/%s/virtfn1: links to 0000:3d:01.7, which '
               'is no readable PCI function' % gh.CRYPTO_PF)
    assert crypto.warnings == [warning]
    assert found[gh.INFERENCE].warnings == []
    assert caplog.text.count(warning) == 1
    # logged once per process, not once per pass
    _found(override, gh.AGENT_OPTIONS, root)
    assert caplog.text.count(warning) == 1


# --- Configuration errors. -------------------------------------------------

@pytest.mark.parametrize('group, values, option', [
    ('generic_driver', {'backends': 'crypto,my-card'}, 'backends'),
    ('generic_driver', {'backends': 'crypto,crypto'}, 'backends'),
    ('generic_backend_crypto', {'device_type': 'TPU'}, 'device_type'),
    ('generic_backend_crypto', {'vendor_id': '80z6'}, 'vendor_id'),
    ('generic_backend_crypto', {'product_ids': '37c8,12345'},
     'product_ids'),
    ('generic_backend_crypto', {'vendor_id': None,
                                'device_addresses': '0000:3d:00.0'},
     'product_ids'),
    ('generic_backend_crypto', {'device_addresses': '3d:00.0'},
     'device_addresses'),
    ('generic_backend_crypto', {'vendor_id': None, 'product_ids': ''},
     'device_addresses'),
    ('generic_backend_crypto', {'resource_class': 'bad-name!'},
     'resource_class'),
    ('generic_backend_crypto', {'traits': 'ok,no spaces'}, 'traits'),
    ('generic_backend_crypto', {'services': 'crypto sym'}, 'services'),
    ('generic_backend_crypto', {'host_driver': '../vfio-pci'},
     'host_driver'),
    ('generic_backend_crypto', {'kernel_module': '-r'}, 'kernel_module'),
])
def test_bad_option_stops_the_driver(override, group, values, option):
    _configure(override, _with(gh.SINGLE_BACKEND_OPTIONS, group, **values))
    with pytest.raises(exception.ConfigError) as raised:
        generic.GenericDriver()
    message = str(raised.value)
    assert message.startswith('[%s] %s: ' % (group, option)), message
    assert '\n' not in message


def test_bad_option_stops_the_agent_at_start(override):
    _configure(override, _with(gh.SINGLE_BACKEND_OPTIONS,
                               'generic_backend_crypto', device_type='TPU'))
    with pytest.raises(exception.ConfigError) as raised:
        resource_tracker.ResourceTracker('compute-1')
    assert ("[generic_backend_crypto] device_type: 'TPU' is not one of"
            in str(raised.value))


# --- install_driver / uninstall_driver. ------------------------------------

@pytest.fixture
def modprobe(tmp_path, monkeypatch, override):
    """A fake modprobe first on PATH; privsep runs in the test process."""
    override('sysfs_root', HOST, group='agent')
    tools_dir = tmp_path / 'bin'
    tools_dir.mkdir()

    def install(**behaviour):
        path, record = gpu_fpga_hosts.fake_tool(tools_dir, 'modprobe',
                                                **behaviour)
        monkeypatch.setenv('PATH', '%s%s%s' % (tools_dir, os.pathsep,
                                               os.environ['PATH']))
        return record

    with pci_hosts.privsep_in_process():
        yield install


def _driver_with_module(override, module):
    options = _with(gh.AGENT_OPTIONS, 'generic_backend_inference',
                    kernel_module=module)
    _configure(override, options)
    return generic.GenericDriver()


def test_install_driver_leaves_loaded_modules_alone(override, modprobe):
    record = modprobe()
    # NOTE(tests): sysfs spells vfio-pci's module vfio_pci.
    _driver_with_module(override, 'vfio-pci').install_driver()
    assert not os.path.exists(record)


def test_install_driver_loads_a_missing_module(override, modprobe):
    record = modprobe()
    _driver_with_module(override, 'nitrox').install_driver()
    assert gpu_fpga_hosts.recorded_argv(record) == ['nitrox']


def test_install_driver_failure_carries_the_reason(override, modprobe):
    reason = 'modprobe: FATAL: Module nitrox not found in directory /lib'
    modprobe(exit_code=1, stderr=reason)
    driver = _driver_with_module(override, 'nitrox')
    with pytest.raises(exception.DriverError) as raised:
        driver.install_driver()
    assert 'generic' in str(raised.value)
    assert 'modprobe exited with 1: %s' % reason in str(raised.value)


def test_update_loads_the_module_of_a_new_backend(override, modprobe):
    record = modprobe()
    driver = _driver_with_module(override, 'nitrox')
    driver.update([])
    assert gpu_fpga_hosts.recorded_argv(record) == ['nitrox']
    card = pci_hosts.discover(driver, HOST)[0]
    with pytest.raises(exception.DriverOperationNotSupported):
        driver.update([card], image_path='/tmp/image.bin')


def test_uninstall_driver_unloads_nothing(override, modprobe):
    record = modprobe()
    _driver_with_module(override, 'habanalabs').uninstall_driver()
    assert not os.path.exists(record)


# --- Binding, on a copy of the tree. ---------------------------------------

@pytest.fixture
def host(override, tmp_path, monkeypatch):
    """A copy of generic-host as the agent's sysfs, its devices, and the
    (path below the root, value) of every privileged write."""
    root = pci_hosts.copy_host(gh.NAME, tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    found = _found(override, gh.AGENT_OPTIONS, root)
    writes = []
    write = privsep_sysfs.write

    def recording(sysfs_root, path, value):
        writes.append((os.path.relpath(path, root), str(value)))
        return write(sysfs_root, path, value)

    monkeypatch.setattr(privsep_sysfs, 'write', recording)
    with pci_hosts.privsep_in_process():
        yield generic.GenericDriver(), found, writes


def _fn(address, name):
    return os.path.join('bus', 'pci', 'devices', address, name)


def _bind_writes(address, driver):
    return [(_fn(address, 'driver_override'), driver),
            (_fn(address, os.path.join('driver', 'unbind')), address),
            (os.path.join('bus', 'pci', 'drivers_probe'), address)]


def _vf_overrides(value):
    return [(_fn(vf, 'driver_override'), value) for vf in gh.CRYPTO_VFS]


def test_install_binds_the_handles_to_vfio_pci(host):
    driver, found, writes = host
    driver.install(found[gh.INFERENCE])
    assert writes == _bind_writes(gh.INFERENCE, 'vfio-pci')
    del writes[:]
    # NOTE(tests): the VFs are on vfio-pci already; the PF keeps c6xx.
    driver.install(found[gh.CRYPTO_PF])
    assert writes == _vf_overrides('vfio-pci')


def test_uninstall_clears_driver_override(host):
    driver, found, writes = host
    driver.uninstall(found[gh.CRYPTO_PF])
    assert writes == []
    driver.install(found[gh.CRYPTO_PF])
    del writes[:]
    driver.uninstall(found[gh.CRYPTO_PF])
    assert writes == _vf_overrides('\n')


def test_attach_host_binds_the_host_driver(host):
    driver, found, writes = host
    card = found[gh.CRYPTO_PF]
    driver.attach_host(card, card.deployables[0])
    assert writes == (_bind_writes(VF0, 'c6xxvf')
                      + _bind_writes(VF1, 'c6xxvf'))


def test_detach_host_binds_vfio_pci_back(host):
    driver, found, writes = host
    card = found[gh.INFERENCE]
    driver.detach_host(card, card.deployables[0])
    assert writes == _bind_writes(gh.INFERENCE, 'vfio-pci')


def test_attach_host_needs_a_host_driver(host, override):
    driver, found, writes = host
    override('host_driver', None, group='generic_backend_crypto')
    card = found[gh.CRYPTO_PF]
    with pytest.raises(exception.DriverError,
                       match=r'\[generic_backend_crypto\] host_driver'):
        generic.GenericDriver().attach_host(card, card.deployables[0])
    assert writes == []


def test_attach_host_of_an_unconfigured_backend_fails(host):
    driver, found, writes = host
    card = found[gh.INFERENCE]
    card.vendor_board_info['backend'] = 'gone'
    with pytest.raises(exception.DriverError, match='no configured backend'):
        driver.attach_host(card, card.deployables[0])
    assert writes == []


def test_operations_on_a_vanished_function_fail(host):
    driver, found, _writes = host
    os.remove(os.path.join(CONF.agent.sysfs_root, 'bus', 'pci', 'devices',
                           VF1))
    with pytest.raises(exception.DriverError, match='not in sysfs'):
        driver.install(found[gh.CRYPTO_PF])


def test_health(host):
    driver, found, _writes = host
    assert driver.health(found[gh.CRYPTO_PF]).state == base.OK
    with open(os.path.join(CONF.agent.sysfs_root, _fn(gh.INFERENCE,
                                                      'vendor')), 'w') as out:
        out.write('0xffff\n')
    health = driver.health(found[gh.INFERENCE])
    assert not health.ok and '0xffff' in health.reason


# --- The sample configuration. ---------------------------------------------

def test_sample_config_documents_the_backend_options():
    groups = {getattr(group, 'name', group): [opt.name for opt in group_opts]
              for group, group_opts in opts.list_opts()}
    assert groups['generic_driver'] == ['backends', 'scrub_on_release']
    assert groups['generic_backend_<name>'] == [
        'device_type', 'vendor_id', 'product_ids', 'device_addresses',
        'resource_class', 'traits', 'services', 'host_driver',
        'kernel_module']
