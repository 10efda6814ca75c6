"""The agent's providers in a real Placement, with every service a process.

cyborg-conductor, cyborg-agent and cyborg-api talk over RabbitMQ with
MariaDB; Placement is openstack-placement on a second MariaDB database,
served by its own process so that it can be stopped and started again.
"""

import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg import embedded_placement
from cyborg import exception
from cyborg import states
from cyborg.tests import backends
from cyborg.tests import deployments
from cyborg.tests import placement as placement_helpers
from cyborg.tests import processes

pytestmark = pytest.mark.functional

ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'p1', 'X-User-Id': 'u1'}
V23 = {'OpenStack-API-Version': 'accelerator 2.3'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
TIMEOUT = 60
PER_DEVICE = 4
TRAITS = frozenset({'OWNER_CYBORG', 'CUSTOM_FAKE_DEVICE',
                    'CUSTOM_CYBORG_SERVICE_FPGA_FUNCTION_FAKE'})
RETRY = 'Placement is not up to date for this host (PlacementUnavailable'


@pytest.fixture(scope='module')
def stack(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('placement')
    host = 'node-%s' % uuid.uuid4().hex[:8]
    with backends.temp_database('mysql') as db_url, \
            backends.temp_database('mysql') as placement_url, \
            backends.temp_rabbit_vhost() as transport_url:
        placement = deployments.PlacementProcess(placement_url, host,
                                                 tmp_path)
        try:
            yield from _services(tmp_path, host, db_url, transport_url,
                                 placement)
        finally:
            placement_code = placement.stop()
        assert placement_code == 0, placement.log()[-4000:]
        assert 'Traceback' not in placement.log(), placement.log()


def _services(tmp_path, host, db_url, transport_url, placement):
    # NOTE(tests): healing at every pass lets drift be repaired within a
    # second; the production default (300 s) would outlast the test.
    confs, port = processes.stack_configs(
        tmp_path, host, db_url, transport_url, {
            'agent': {'enabled_drivers': 'fake_driver', 'report_interval': 1,
                      'placement_heal_interval': 1},
            'fake_driver': {'device_count': 2,
                            'accelerators_per_device': PER_DEVICE},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': placement.url,
                          'token': embedded_placement.ADMIN_TOKEN},
        })
    placement.wait_listening()
    root = placement.client().provider_by_name(host)['uuid']
    procs = [processes.Process('cyborg-conductor', confs['cyborg-conductor'],
                               tmp_path)]
    try:
        # NOTE(tests): an agent report sent before the conductor listens
        # is lost and waited for until the RPC timeout; the agent writes
        # Placement only after that wait.
        processes.wait_for(lambda: 'started on host' in procs[0].log(),
                           TIMEOUT, what='the conductor to listen')
        procs += [processes.Process(name, confs[name], tmp_path)
                  for name in ('cyborg-agent', 'cyborg-api')]
        stack = {'url': 'http://127.0.0.1:%d' % port, 'host': host,
                 'root': root, 'db_url': db_url, 'placement': placement,
                 'agent': procs[1], 'procs': procs}
        processes.wait_for(lambda: _devices(stack), TIMEOUT,
                           what='the agent report in the API')
        yield stack
    finally:
        processes.stop_cleanly(procs)


# --- Helpers ---------------------------------------------------------------


def _names(stack):
    return ['%s_FakeDevice' % stack['host'], '%s_FakeDevice1' % stack['host']]


def _subtree(stack):
    """name -> {uuid, parent, traits, inventories} of the root's children."""
    return placement_helpers.children(stack['placement'].client(),
                                      stack['root'])


def _tree_size(stack):
    """Providers in the compute node's tree, itself included."""
    client = stack['placement'].client()
    return len(client.providers_in_tree(stack['root']))


def _expected(stack, reserved):
    """The subtree the agent should write; ``reserved``: name -> units."""
    return {name: {
        'uuid': str(uuid.uuid3(uuid.NAMESPACE_DNS, name)),
        'parent': stack['root'],
        'traits': TRAITS,
        'inventories': {'FPGA': {'total': PER_DEVICE,
                                 'reserved': reserved[name],
                                 'max_unit': PER_DEVICE}}}
        for name in _names(stack)}


def _settle(stack, want, what):
    """Poll Placement until ``want`` is its subtree; return the subtree."""
    seen = {}

    def matches():
        try:
            seen['tree'] = _subtree(stack)
        except exception.PlacementError as exc:
            # NOTE(tests): a provider deleted between listing the tree and
            # reading it answers 404; the next poll sees the tree again.
            seen['tree'] = exc
            return None
        return seen['tree'] == want

    try:
        processes.wait_for(matches, TIMEOUT, what=what)
    except AssertionError as exc:
        raise AssertionError('%s\nwanted %s\nPlacement holds %s\nagent log:'
                             '\n%s' % (exc, want, seen.get('tree'),
                                       stack['agent'].log()[-4000:])
                             ) from None
    return seen['tree']


def _devices(stack):
    resp = requests.get(stack['url'] + '/v2/devices', headers=ADMIN,
                        timeout=10)
    if resp.status_code != 200:
        return None
    return len([d for d in resp.json()['devices']
                if d['hostname'] == stack['host']]) == 2


def _device_of(stack, deployable_name):
    """The uuid of the device a deployable belongs to."""
    engine = sa.create_engine(stack['db_url'])
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT devices.uuid FROM devices JOIN deployables ON '
                'deployables.device_id = devices.id '
                'WHERE deployables.name = :name'),
                {'name': deployable_name}).scalar_one()
    finally:
        engine.dispose()


def _post(stack, device, action, headers):
    return requests.post('%s/v2/devices/%s/%s' % (stack['url'], device,
                                                   action),
                         headers=dict(ADMIN, **headers), timeout=60)


def _status(stack, device):
    resp = requests.get('%s/v2/devices/%s' % (stack['url'], device),
                        headers=dict(ADMIN, **V24), timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()['status']


# --- Tests -----------------------------------------------------------------


def test_one_provider_per_deployable_under_the_compute_node(stack):
    first, second = _names(stack)
    _settle(stack, _expected(stack, {first: PER_DEVICE, second: PER_DEVICE}),
            'both inactive providers, fully reserved')
    assert _tree_size(stack) == 3


def test_device_lifecycle_reserves_and_frees_its_provider(stack):
    first, second = _names(stack)
    device = _device_of(stack, first)
    _settle(stack, _expected(stack, {first: PER_DEVICE, second: PER_DEVICE}),
            'both providers before the lifecycle')

    resp = _post(stack, device, 'activate', V24)
    assert resp.status_code == 200, resp.text
    assert resp.json()['status'] == states.DEVICE_READY
    _settle(stack, _expected(stack, {first: 0, second: PER_DEVICE}),
            'the activated device to be free in Placement')

    resp = _post(stack, device, 'disable', V23)
    assert resp.status_code == 204, resp.text
    assert _status(stack, device) == states.DEVICE_MAINTAINING
    _settle(stack, _expected(stack, {first: PER_DEVICE, second: PER_DEVICE}),
            'the disabled device to be reserved again')

    resp = _post(stack, device, 'enable', V23)
    assert resp.status_code == 204, resp.text
    assert _status(stack, device) == states.DEVICE_READY
    _settle(stack, _expected(stack, {first: 0, second: PER_DEVICE}),
            'the enabled device to be free again')


def test_heal_repairs_a_deleted_provider_and_a_removed_trait(stack):
    first, second = _names(stack)
    agent = stack['agent']
    before = _settle(stack, _expected(stack, {
        name: 0 if _status(stack, _device_of(stack, name)) ==
        states.DEVICE_READY else PER_DEVICE for name in (first, second)}),
        'the providers before the drift')
    offset = len(agent.log())
    client = stack['placement'].client()

    assert client.delete_provider(before[first]['uuid'])
    generation, traits = client.get_traits(before[second]['uuid'])
    client.set_traits(before[second]['uuid'], generation,
                      set(traits) - {'CUSTOM_FAKE_DEVICE'})

    _settle(stack, before, 'the agent to heal both providers')
    assert 'no longer in Placement' in agent.log()[offset:]


def test_agent_catches_up_after_a_placement_outage(stack):
    first, second = _names(stack)
    agent = stack['agent']
    placement = stack['placement']
    device = _device_of(stack, second)
    assert _status(stack, device) == states.DEVICE_INACTIVE
    reserved = {first: 0 if _status(stack, _device_of(stack, first)) ==
                states.DEVICE_READY else PER_DEVICE, second: PER_DEVICE}
    before = _settle(stack, _expected(stack, reserved),
                     'the providers before the outage')
    offset = len(agent.log())

    assert placement.stop() == 0, placement.log()[-4000:]
    processes.wait_for(lambda: agent.log()[offset:].count(RETRY) >= 2,
                       TIMEOUT, what='two agent passes retrying Placement')
    assert agent.alive(), agent.log()[-4000:]

    placement.start().wait_listening()
    _settle(stack, before, 'the providers after the outage')
    # NOTE(tests): nothing changed while Placement was down, so Placement
    # alone cannot show that the agent writes again; a status change made
    # now has to reach it.
    resp = _post(stack, device, 'activate', V24)
    assert resp.status_code == 200, resp.text
    reserved[second] = 0
    after = _settle(stack, _expected(stack, reserved),
                    'the agent to write Placement again')
    assert {p['uuid'] for p in after.values()} == \
        {p['uuid'] for p in before.values()}
    assert _tree_size(stack) == 3
    outage_log = agent.log()[offset:]
    assert 'Created resource provider' not in outage_log, outage_log
    assert 'Adopted resource provider' not in outage_log, outage_log
    assert 'Traceback' not in outage_log, outage_log
