"""Partition modes on an agent: kept on disk, switched with one reshape."""

import json
import os

from oslo_config import cfg
import pytest

from cyborg import exception
from cyborg.agent import modes
from cyborg.agent import reshape
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as dbapi
from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF
HOST = 'node1'
DRIVER = 'nvidia_gpu'


def _name(address, type_id=None):
    return '%s_%s' % (HOST, address) + ('_' + type_id if type_id else '')


# --- The store ---------------------------------------------------------------

def test_store_keeps_choices_across_restarts(tmp_path):
    path = str(tmp_path / modes.state_file(HOST))
    store = modes.ModeStore(path)
    assert store.mapping() == {}
    assert store.set(DRIVER, nv.T4_FRESH, 'vgpu:nvidia-222') is None
    assert store.set(DRIVER, nv.T4_FRESH, 'passthrough') == \
        'vgpu:nvidia-222'
    again = modes.ModeStore(path)
    assert again.mapping() == {DRIVER: {nv.T4_FRESH: 'passthrough'}}
    assert again.get(DRIVER, nv.T4_FRESH) == 'passthrough'
    with open(path) as handle:
        assert json.load(handle) == {
            'modes': {DRIVER: {nv.T4_FRESH: 'passthrough'}}}
    again.set(DRIVER, nv.T4_FRESH, None)
    assert modes.ModeStore(path).mapping() == {}


def test_a_damaged_store_is_no_choice(tmp_path):
    path = tmp_path / 'modes.json'
    path.write_text('{"modes": [1, 2')
    assert modes.ModeStore(str(path)).mapping() == {}
    path.write_text('{"modes": {"nvidia_gpu": {"0000:5e:00.0": 3}}}')
    assert modes.ModeStore(str(path)).mapping() == {}


@pytest.mark.parametrize('value', [
    '0000:5E:00.0', {'domain': '0000', 'bus': '5e', 'device': '00',
                     'function': '0'},
    '{"bus": "5e", "device": "00", "domain": "0000", "function": "0"}'])
def test_addresses_in_any_form(value):
    assert modes.address_text(value) == nv.T4_FRESH


# --- Switching on a running agent --------------------------------------------

@pytest.fixture
def agent(stack, override, tmp_path):
    """An agent of nvidia-host (a writable copy) without Placement."""
    return _agent(stack, override, tmp_path)


def _agent(stack, override, tmp_path, placement=None):
    root = pci_hosts.copy_host(nv.NAME, tmp_path / nv.NAME)
    override('sysfs_root', root, group='agent')
    override('enabled_drivers', ['nvidia_gpu_driver'], group='agent')
    started = stack(HOST, placement=placement)
    started.report()
    return started


def _switch(ctx, address, mode, driver=DRIVER):
    return agent_rpcapi.AgentAPI().set_device_mode(ctx, HOST, driver,
                                                   address, mode)


def _mode_file(tmp_path):
    path = tmp_path / modes.state_file(HOST)
    if not path.exists():
        return None
    return json.loads(path.read_text())['modes']


def test_switch_without_placement_reports_at_once(agent, ctx, tmp_path):
    answer = _switch(ctx, nv.T4_FRESH, 'vgpu:nvidia-222')
    assert answer == {'mode': 'vgpu:nvidia-222', 'changed': True,
                      'modes': ['passthrough', 'vgpu:nvidia-222',
                                'vgpu:nvidia-223', 'vgpu:nvidia-230'],
                      'deployables': [_name(nv.T4_FRESH, 'nvidia-222')]}
    assert _mode_file(tmp_path) == {DRIVER: {nv.T4_FRESH: 'vgpu:nvidia-222'}}
    # The conductor has the new arrangement already.
    names = {dep.name for dep in dbapi.deployables.list(ctx)}
    assert _name(nv.T4_FRESH, 'nvidia-222') in names
    assert _name(nv.T4_FRESH) not in names
    sent = agent.cache.devices
    (t4,) = [dev for dev in sent.values()
             if dev['controlpath']['cpid_info']['bus'] == '5e']
    assert (t4['mode'], [d['name'] for d in t4['deployables']]) == (
        'vgpu:nvidia-222', [_name(nv.T4_FRESH, 'nvidia-222')])
    # A restarted agent keeps the mode.
    again = agent.__class__(HOST)
    host_report, _failed = again.tracker.discover()
    (t4,) = [d for d in host_report.devices
             if d.controlpath.cpid_info['bus'] == '5e']
    assert t4.mode == 'vgpu:nvidia-222'


def test_the_mode_it_is_in_changes_nothing(agent, ctx, tmp_path):
    answer = _switch(ctx, nv.T4_FRESH, 'passthrough')
    assert (answer['changed'], answer['mode']) == (False, 'passthrough')
    assert _mode_file(tmp_path) is None


@pytest.mark.parametrize('address, mode, driver, error', [
    (nv.A10_VFIO, 'vgpu:nvidia-222', DRIVER, exception.DeviceModeNotOffered),
    ('0000:01:00.0', 'passthrough', DRIVER, exception.DeviceModeNotOffered),
    ('not-an-address', 'passthrough', DRIVER,
     exception.DeviceModeNotOffered),
    # Holds a GRID T4-1B vGPU.
    (nv.T4_BUSY, 'passthrough', DRIVER, exception.DeviceHoldsVgpus),
    # Two of its VFs hold vGPUs.
    (nv.A100_PF, 'sriov-vgpu:nvidia-472', DRIVER, exception.DeviceHoldsVgpus),
    (nv.T4_FRESH, 'passthrough', 'intel_qat', exception.DriverError),
])
def test_refusals(agent, ctx, tmp_path, address, mode, driver, error):
    with pytest.raises(error):
        _switch(ctx, address, mode, driver)
    assert _mode_file(tmp_path) is None


def test_refusal_names_what_is_offered_and_what_is_in_use(agent, ctx):
    with pytest.raises(exception.DeviceModeNotOffered,
                       match='it offers passthrough'):
        _switch(ctx, nv.A10_VFIO, 'vgpu:nvidia-222')
    with pytest.raises(exception.DeviceHoldsVgpus,
                       match=nv.mdev_uuid(0, 0)):
        _switch(ctx, nv.T4_BUSY, 'passthrough')


# --- With a real Placement ---------------------------------------------------

@pytest.fixture
def placed(stack, override, tmp_path, placement, ctx):
    """An agent of nvidia-host writing to Placement, its devices ready."""
    started = _agent(stack, override, tmp_path, placement)
    conductor = conductor_rpcapi.ConductorAPI()
    for device in started.last_result['devices']:
        conductor.activate_device(ctx, device['uuid'])
    started.report()
    return started


def test_switch_reshapes_placement_in_one_step(placed, placement, ctx,
                                               tmp_path):
    before = placement.subtree(HOST)
    assert before[_name(nv.T4_FRESH)]['inventories'] == {
        'PGPU': {'total': 1, 'reserved': 0, 'max_unit': 1}}
    # An instance on another GPU of the host.
    rtx = before[_name(nv.RTX)]['uuid']
    consumer = placement.allocate(rtx, 'PGPU', 1)

    answer = _switch(ctx, nv.T4_FRESH, 'vgpu:nvidia-222')
    assert answer['deployables'] == [_name(nv.T4_FRESH, 'nvidia-222')]
    after = placement.subtree(HOST)
    assert _name(nv.T4_FRESH) not in after
    new = after[_name(nv.T4_FRESH, 'nvidia-222')]
    assert new['inventories'] == {
        'VGPU': {'total': 16, 'reserved': 0, 'max_unit': 16}}
    assert 'CUSTOM_NVIDIA_1EB8_GRID_T4_1B' in new['traits']
    # Nothing else moved.
    for name, provider in before.items():
        if name != _name(nv.T4_FRESH):
            assert after[name] == provider
    client = placement.client()
    assert client.get_allocations(rtx) == [consumer]
    assert client.get_usages(rtx) == {'PGPU': 1}
    # The agent's saved state is Placement's: the next pass writes nothing.
    calls = placed.placement.client.calls
    placed.report()
    assert placed.placement.client.calls == calls
    assert placement.subtree(HOST) == after

    # And back, to a provider of the same name as the first.
    _switch(ctx, nv.T4_FRESH, 'passthrough')
    back = placement.subtree(HOST)
    assert back[_name(nv.T4_FRESH)] == before[_name(nv.T4_FRESH)]
    assert _name(nv.T4_FRESH, 'nvidia-222') not in back
    assert _mode_file(tmp_path) == {DRIVER: {nv.T4_FRESH: 'passthrough'}}


def test_a100_switch_offers_max_instance_vgpus(placed, placement, ctx,
                                               tmp_path):
    # Its two vGPUs made by hand are gone: each VF can hold one of any
    # type again.
    root = CONF.agent.sysfs_root
    for vf in nv.A100_VFS:
        types = os.path.join(root, 'bus', 'pci', 'devices', vf,
                             'mdev_supported_types')
        for type_id in os.listdir(types):
            devices = os.path.join(types, type_id, 'devices')
            for entry in (os.listdir(devices) if os.path.isdir(devices)
                          else ()):
                os.remove(os.path.join(devices, entry))
            with open(os.path.join(types, type_id,
                                   'available_instances'), 'w') as out:
                out.write('1\n')
    placed.report()
    _switch(ctx, nv.A100_PF, 'sriov-vgpu:nvidia-474')
    after = placement.subtree(HOST)
    assert after[_name(nv.A100_PF, 'nvidia-474')]['inventories'] == {
        'VGPU': {'total': 4, 'reserved': 0, 'max_unit': 4}}
    _switch(ctx, nv.A100_PF, 'sriov-vgpu:nvidia-471')
    after = placement.subtree(HOST)
    assert after[_name(nv.A100_PF, 'nvidia-471')]['inventories'] == {
        'VGPU': {'total': 10, 'reserved': 0, 'max_unit': 10}}
    assert _name(nv.A100_PF, 'nvidia-474') not in after


def test_a_refused_reshape_leaves_placement_and_the_mode(placed, placement,
                                                         ctx, tmp_path):
    before = placement.subtree(HOST)
    # An allocation the conductor did not know of when it asked.
    old = before[_name(nv.T4_FRESH)]['uuid']
    consumer = placement.allocate(old, 'PGPU', 1)
    state = placed.placement.providers[old]['generation']
    with pytest.raises(exception.DeviceModeSwitchFailed,
                       match='inventory|in use|allocat'):
        _switch(ctx, nv.T4_FRESH, 'vgpu:nvidia-222')
    assert placement.subtree(HOST) == before
    assert placement.client().get_allocations(old) == [consumer]
    assert _mode_file(tmp_path) in (None, {})
    assert placed.placement.providers[old]['generation'] == state
    # The agent still reports the old arrangement.
    placed.report()
    assert placement.subtree(HOST) == before
    (t4,) = [d for d in placed._found.values()
             if d.controlpath.cpid_info['bus'] == '5e']
    assert t4.mode == 'passthrough'


def test_the_report_lock_is_held_while_placement_changes(placed, ctx,
                                                         monkeypatch):
    seen = []
    real = reshape.rearrange

    def watching(tree, key, device):
        seen.append(placed._lock.locked())
        return real(tree, key, device)

    monkeypatch.setattr(reshape, 'rearrange', watching)
    _switch(ctx, nv.T4_FRESH, 'vgpu:nvidia-230')
    assert seen == [True]
