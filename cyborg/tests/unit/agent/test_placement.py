"""The agent's provider subtree in a real Placement, through every change."""

import glob
import json
import os
import uuid

from oslo_config import cfg
import pytest

from cyborg import states
from cyborg.agent import cache as report_cache
from cyborg.agent import placement as agent_placement
from cyborg.agent import resource_tracker
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conf import gpu
from cyborg.db import api as dbapi
from cyborg.tests import placement as placement_helpers
from cyborg.tests.fixtures import mixed_host
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF

# Simulated host -> (drivers, extra options) the agent runs there.
HOSTS = {
    'gpu-host': (['nvidia_gpu_driver'], {}),
    'fpga-host': (['intel_fpga_driver'], {}),
    'qat-host': (['intel_qat_driver'], {}),
    'pci-host': (['pci_driver'], {'pci': {'device_spec': [
        '[{"class_id": "0108"}, {"class_id": "12"}]']}}),
    'ascend-host': (['huawei_ascend_driver'], {}),
    mixed_host.NAME: (
        mixed_host.AGENT_OPTIONS['agent']['enabled_drivers'].split(','),
        {'pci': {'device_spec': [mixed_host.AGENT_OPTIONS['pci'][
            'device_spec']]},
         'gpu_devices': {'enabled_vgpu_types': ['nvidia-222']},
         'vgpu_nvidia-222': {'device_addresses': [mixed_host.VGPU_GPU]}}),
}


def _configure(override, host, root=None):
    drivers, options = HOSTS[host]
    override('sysfs_root', root or pci_hosts.committed(host), group='agent')
    for group, values in options.items():
        for name, value in values.items():
            override(name, value, group=group)
        if group == 'gpu_devices':
            # NOTE(tests): the [vgpu_<type>] groups follow the types.
            gpu.register_dynamic_opts(CONF)
    return drivers


def _discover(host, drivers):
    found, failed = resource_tracker.ResourceTracker(host,
                                                     drivers).discover()
    assert failed == []
    return {report_cache.device_key(dev): dev
            for dev in found.to_primitive()['devices']}


def _expected(devices, statuses=None):
    statuses = statuses or {}
    expected = {}
    for key, dev in devices.items():
        ready = statuses.get(key) == states.DEVICE_READY
        for dep in dev['deployables']:
            total = dep['num_accelerators']
            expected[dep['name']] = {
                'uuid': str(uuid.uuid3(uuid.NAMESPACE_DNS, dep['name'])),
                'traits': ({'OWNER_CYBORG'} | set(dep['traits']) |
                           {agent_placement.service_trait(s)
                            for s in dev['services']}),
                'inventories': {dep['resource_class']: {
                    'total': total, 'reserved': 0 if ready else total,
                    'max_unit': total}}}
    return expected


def _tree(placement, tmp_path, host):
    placement.compute_node(host)
    return placement_helpers.provider_tree(placement, host, tmp_path)


def _ready(tree, devices):
    # NOTE(tests): only a ready device has free inventory to allocate.
    tree.set_statuses({key: states.DEVICE_READY for key in devices})


@pytest.mark.parametrize('host', sorted(HOSTS))
def test_tree_of_every_simulated_host(host, placement, override, tmp_path):
    devices = _discover(host, _configure(override, host))
    tree = _tree(placement, tmp_path, host)
    assert tree.heal(devices) == 0
    subtree = placement.subtree(host)
    assert subtree == _expected(devices)
    assert len(subtree) == sum(len(d['deployables'])
                               for d in devices.values()) > 0
    for name, provider in subtree.items():
        assert name.startswith(host + '_')
        assert provider['uuid'] == agent_placement.provider_uuid(name)


def test_service_traits_are_valid_placement_names():
    assert agent_placement.service_trait('crypto.sym') == \
        'CUSTOM_CYBORG_SERVICE_CRYPTO_SYM'
    assert agent_placement.service_trait('fpga.function:9a-b') == \
        'CUSTOM_CYBORG_SERVICE_FPGA_FUNCTION_9A_B'
    assert len(agent_placement.service_trait('x' * 400)) == 255


def test_names_found_under_the_configured_provider(placement, override,
                                                   tmp_path):
    override('resource_provider_name', 'node1.example.com', group='agent')
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1.example.com')
    assert tree.sync(devices) == 0
    assert list(placement.subtree('node1.example.com')) == [
        'node1_FakeDevice']


def test_unchanged_host_costs_no_request(placement, override, tmp_path):
    override('device_count', 3, group='fake_driver')
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    tree.sync(devices)
    before = tree.client.calls
    assert tree.sync(devices) == 0
    # A restarted agent reads what it wrote from its state file.
    again = placement_helpers.provider_tree(placement, 'node1', tmp_path)
    assert again.sync(devices) == 0
    assert tree.client.calls == before and again.client.calls == 0


def test_new_provider_costs_three_requests(placement, override, tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    tree.sync(devices)
    override('device_count', 2, group='fake_driver')
    before = tree.client.calls
    tree.sync(_discover('node1', ['fake_driver']))
    # create, inventories, traits
    assert tree.client.calls - before == 3


# --- Lifecycle -------------------------------------------------------------

def _reserved(placement, host):
    return {name: provider['inventories']['FPGA']['reserved']
            for name, provider in placement.subtree(host).items()}


def test_lifecycle_reserves_and_frees(stack, placement, ctx):
    agent = stack('node1', placement=placement)
    agent.report()
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 16}
    (deployable,) = dbapi.deployables.list(ctx)
    assert deployable.rp_uuid == placement.subtree('node1')[
        'node1_FakeDevice']['uuid']
    (device,) = agent.last_result['devices']
    conductor = conductor_rpcapi.ConductorAPI()
    assert conductor.activate_device(ctx, device['uuid']).status == 'ready'
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 0}
    conductor.set_device_enabled(ctx, device['uuid'], False)
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 16}
    conductor.set_device_enabled(ctx, device['uuid'], True)
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 0}
    # An unchanged pass keeps the status the agent was told.
    before = agent.placement.client.calls
    assert agent.report() is None
    assert agent.placement.client.calls == before


def test_unhealthy_device_is_reserved_at_once(placement, override, tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    (key,) = devices
    tree.set_statuses({key: states.DEVICE_READY})
    tree.sync(devices)
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 0}
    devices[key]['fault'] = 'temperature sensor says 104 C'
    tree.sync(devices)
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 16}


def test_heal_takes_statuses_from_the_conductor(stack, placement, ctx):
    agent = stack('node1', placement=placement)
    agent.report()
    (device,) = agent.last_result['devices']
    # The agent misses the change (say it was down when it happened).
    dbapi.devices.update(ctx, device['uuid'], {'status': 'ready'})
    agent.report()
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 16}
    agent._heal_due = 0
    agent.report()
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 0}


# --- Hardware changes --------------------------------------------------------

QAT_PF = '0000:3d:00.0'


def _fn(root, address, *names):
    return os.path.join(root, 'bus', 'pci', 'devices', address, *names)


def test_fewer_vfs_shrink_the_inventory_but_never_below_allocations(
        placement, override, tmp_path):
    root = pci_hosts.copy_host('qat-host', tmp_path / 'sys')
    drivers = _configure(override, 'qat-host', root)
    tree = _tree(placement, tmp_path, 'qat-host')
    tree.sync(_discover('qat-host', drivers))
    name = 'qat-host_%s' % QAT_PF
    provider = placement.subtree('qat-host')[name]
    total = provider['inventories']['CUSTOM_QAT']['total']
    tree.set_statuses({key: 'ready'
                       for key in _discover('qat-host', drivers)})
    tree.sync(_discover('qat-host', drivers))
    placement.allocate(provider['uuid'], 'CUSTOM_QAT', total - 1)

    last = max(glob.glob(_fn(root, QAT_PF, 'virtfn*')),
               key=lambda p: int(p.rsplit('virtfn', 1)[1]))
    os.remove(last)
    for _ in range(2):
        os.remove(max(glob.glob(_fn(root, QAT_PF, 'virtfn*')),
                      key=lambda p: int(p.rsplit('virtfn', 1)[1])))
    tree.sync(_discover('qat-host', drivers))
    inventory = placement.subtree('qat-host')[name]['inventories'][
        'CUSTOM_QAT']
    # total - 3 VFs remain but total - 1 are allocated: the allocated
    # amount stays, and the two units that do not exist are reserved.
    assert inventory == {'total': total - 1, 'reserved': 2,
                         'max_unit': total - 1}


def test_vgpu_instances_follow_the_hardware(placement, override, tmp_path):
    root = pci_hosts.copy_host(mixed_host.NAME, tmp_path / 'sys')
    drivers = _configure(override, mixed_host.NAME, root)
    tree = _tree(placement, tmp_path, mixed_host.NAME)
    tree.sync(_discover(mixed_host.NAME, drivers))
    available = os.path.join(
        root, 'bus', 'pci', 'devices', mixed_host.VGPU_GPU,
        'mdev_supported_types', 'nvidia-222', 'available_instances')
    with open(available, 'w') as out:
        out.write('4\n')
    devices = _discover(mixed_host.NAME, drivers)
    assert tree.sync(devices) == 0
    vgpus = [p['inventories']['VGPU'] for p in
             placement.subtree(mixed_host.NAME).values()
             if 'VGPU' in p['inventories']]
    assert vgpus == [{'total': 4, 'reserved': 4, 'max_unit': 4}]
    assert placement.subtree(mixed_host.NAME) == _expected(devices)


def test_reprogrammed_fpga_shows_its_new_function(placement, override,
                                                  tmp_path):
    root = pci_hosts.copy_host('fpga-host', tmp_path / 'sys')
    drivers = _configure(override, 'fpga-host', root)
    tree = _tree(placement, tmp_path, 'fpga-host')
    tree.sync(_discover('fpga-host', drivers))
    before = placement.subtree('fpga-host')
    (afu,) = glob.glob(os.path.join(root, 'devices', '*', '0000:3b:00.0',
                                    'fpga', '*', '*', 'afu_id'))
    with open(afu, 'w') as out:
        out.write('00112233445566778899aabbccddeeff\n')
    devices = _discover('fpga-host', drivers)
    assert tree.sync(devices) == 0
    after = placement.subtree('fpga-host')
    assert after == _expected(devices)
    changed = {name for name in after
               if after[name]['traits'] != before[name]['traits']}
    assert changed == {'fpga-host_0000:3b:00.0'}
    assert any('00112233445566778899AABBCCDDEEFF' in trait
               for trait in after['fpga-host_0000:3b:00.0']['traits'])


def test_unplugged_device_without_allocations_goes_away(
        stack, placement, override, ctx):
    override('device_count', 2, group='fake_driver')
    agent = stack('node1', placement=placement)
    agent.report()
    assert len(placement.subtree('node1')) == 2
    override('device_count', 1, group='fake_driver')
    agent.report()
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']
    assert len(dbapi.devices.list(ctx)) == 1


def test_vanished_provider_costs_one_read_and_one_delete(
        placement, override, tmp_path):
    override('device_count', 2, group='fake_driver')
    tree = _tree(placement, tmp_path, 'node1')
    tree.sync(_discover('node1', ['fake_driver']))
    gone = {key for key, device in tree.providers.items()
            if device['name'] == 'node1_FakeDevice1'}
    override('device_count', 1, group='fake_driver')
    devices = _discover('node1', ['fake_driver'])
    before = tree.client.calls
    assert tree.held({tree.providers[u]['device'] for u in gone}) == set()
    assert tree.sync(devices) == 0
    # the usages read that held() needs, then the DELETE
    assert tree.client.calls - before == 2
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']


def test_unplugged_device_with_allocations_stays_lost_until_freed(
        stack, placement, override, ctx):
    override('device_count', 2, group='fake_driver')
    agent = stack('node1', placement=placement)
    agent.report()
    conductor = conductor_rpcapi.ConductorAPI()
    for device in agent.last_result['devices']:
        conductor.activate_device(ctx, device['uuid'])
    gone = placement.subtree('node1')['node1_FakeDevice1']
    consumer = placement.allocate(gone['uuid'], 'FPGA', 2)
    override('device_count', 1, group='fake_driver')
    agent.report()
    subtree = placement.subtree('node1')
    assert subtree['node1_FakeDevice1']['inventories']['FPGA'][
        'reserved'] == 16
    statuses = sorted(d.status for d in dbapi.devices.list(ctx))
    assert statuses == [states.DEVICE_LOST, states.DEVICE_READY]
    # Nothing to do while the allocation lasts, and no request for it.
    before = agent.placement.client.calls
    agent.report()
    assert agent.placement.client.calls == before

    placement.free(consumer)
    agent._heal_due = 0
    agent.report()
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']
    agent.report()
    assert [d.status for d in dbapi.devices.list(ctx)] == [
        states.DEVICE_READY]


# --- Heal ------------------------------------------------------------------

def test_heal_repairs_drift_and_keeps_allocations(placement, override,
                                                  tmp_path):
    override('device_count', 3, group='fake_driver')
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    _ready(tree, devices)
    tree.heal(devices)
    expected = placement.subtree('node1')
    client = placement.client()
    first, second, third = (expected[n]['uuid'] for n in (
        'node1_FakeDevice', 'node1_FakeDevice1', 'node1_FakeDevice2'))
    consumer = placement.allocate(second, 'FPGA', 1)
    client.delete_provider(first)
    generation, traits = client.get_traits(second)
    client.set_traits(second, generation, traits - {'CUSTOM_FAKE_DEVICE'})
    generation, invs = client.get_inventories(third)
    invs['FPGA'].update(total=99, max_unit=99, reserved=0)
    client.set_inventories(third, generation, invs)

    # A plain pass trusts what it wrote; the heal looks.
    tree.sync(devices)
    assert placement.subtree('node1') != expected
    assert tree.heal(devices) == 0
    healed = placement.subtree('node1')
    assert {n: dict(p, uuid=None) for n, p in healed.items()} == {
        n: dict(p, uuid=None) for n, p in expected.items()}
    allocations = client._request(
        'GET', '/allocations/%s' % consumer).json()['allocations']
    assert allocations == {second: {'resources': {'FPGA': 1},
                                    'generation': allocations[second][
                                        'generation']}}


def test_heal_adopts_providers_of_an_agent_that_lost_its_state(
        placement, override, tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    tree.sync(devices)
    os.remove(tree.path)
    fresh = placement_helpers.provider_tree(placement, 'node1', tmp_path)
    assert fresh.heal(devices) == 0
    # root by name, in_tree, then inventories and traits of the one found
    assert fresh.client.calls == 4
    assert len(placement.subtree('node1')) == 1


# --- Failures ----------------------------------------------------------------

def test_placement_errors_back_off_and_catch_up(stack, placement, caplog):
    agent = stack('node1', placement=placement)
    placement.faults.status = 503
    assert agent.report() == 1
    assert agent.report() == 2
    assert agent.report() == 4
    assert 'Placement is not up to date for this host' in caplog.text
    placement.faults.status = None
    assert placement.subtree('node1') == {}
    assert agent.report() is None
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']
    # The conductor got the inventory all along.
    assert agent.cache.generation == 1


def test_unreachable_placement_backs_off(stack, placement, override,
                                         tmp_path):
    from cyborg import embedded_placement
    from cyborg.tests import processes

    agent = stack('node1', placement=placement)
    agent.placement.client = embedded_placement.client_for(
        'http://127.0.0.1:%d' % processes.free_port())
    assert agent.report() == 1
    agent.placement.client = placement.client()
    assert agent.report() is None
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']


def test_lost_answer_to_a_create_adopts_instead_of_duplicating(
        placement, tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    (dep,) = next(iter(devices.values()))['deployables']
    # The POST reached Placement but its answer never came back.
    root = placement.client().provider_by_name('node1')['uuid']
    placement.client().create_provider(
        agent_placement.provider_uuid(dep['name']), dep['name'], root)
    assert tree.sync(devices) == 0
    assert placement.subtree('node1') == _expected(devices)


def test_name_taken_by_another_provider_is_reported(placement, tmp_path,
                                                    caplog):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    placement.client().create_provider(str(uuid.uuid4()), 'node1_FakeDevice',
                                       None)
    assert tree.sync(devices) == 1
    assert 'already has a resource provider named node1_FakeDevice' in \
        caplog.text


def test_missing_compute_node_is_named_and_retried(stack, placement,
                                                   caplog):
    agent = stack('node1', placement=placement)
    root = placement.client().provider_by_name('node1')['uuid']
    placement.client().delete_provider(root)
    assert agent.report() == 1
    assert 'Placement has no resource provider named node1' in caplog.text
    placement.compute_node('node1')
    assert agent.report() is None
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']


def test_generation_conflict_is_retried(placement, tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    tree.sync(devices)
    (key,) = devices
    _ready(tree, devices)
    tree.sync(devices)
    provider = placement.subtree('node1')['node1_FakeDevice']
    # An allocation moves the provider's generation behind the agent.
    placement.allocate(provider['uuid'], 'FPGA', 1)
    tree.set_statuses({key: states.DEVICE_MAINTAINING})
    assert tree.sync(devices) == 0
    assert _reserved(placement, 'node1') == {'node1_FakeDevice': 16}


def test_delete_refused_for_allocations_is_not_an_error(placement,
                                                        tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    _ready(tree, devices)
    tree.sync(devices)
    provider = placement.subtree('node1')['node1_FakeDevice']
    placement.allocate(provider['uuid'], 'FPGA', 1)
    assert placement.client().delete_provider(provider['uuid']) is False


def test_vanished_devices_are_held_while_placement_is_down(
        stack, placement, override, ctx):
    override('device_count', 2, group='fake_driver')
    agent = stack('node1', placement=placement)
    agent.report()
    placement.faults.status = 500
    override('device_count', 1, group='fake_driver')
    agent.report()
    # Placement could not say whether it was allocated: kept, as lost.
    assert sorted(d.status for d in dbapi.devices.list(ctx)) == [
        states.DEVICE_INACTIVE, states.DEVICE_LOST]
    placement.faults.status = None
    agent.report()
    agent._heal_due = 0
    agent.report()
    agent.report()
    assert list(placement.subtree('node1')) == ['node1_FakeDevice']
    assert [d.status for d in dbapi.devices.list(ctx)] == [
        states.DEVICE_INACTIVE]


def test_state_file_is_json(placement, tmp_path):
    devices = _discover('node1', ['fake_driver'])
    tree = _tree(placement, tmp_path, 'node1')
    tree.sync(devices)
    with open(tree.path) as handle:
        saved = json.load(handle)
    assert saved['name'] == 'node1'
    assert list(saved['providers']) == [
        agent_placement.provider_uuid('node1_FakeDevice')]
