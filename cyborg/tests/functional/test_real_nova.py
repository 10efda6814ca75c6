"""Nova 34 from PyPI, unpatched, manages servers with accelerators.

Every process is real (``cyborg.tests.nova.stack``): Keystone, Placement,
Glance, Cyborg's API, conductor and two agents, and Nova's API, conductor,
scheduler and two nova-compute services with the fake virt driver. Each
step checks Cyborg's side as Nova's own functional tests check Placement:
the server's ARQs are Bound to it and to its host, no handle is held
twice, and Placement's allocations name the device on that host.
"""

import time

import pytest

from cyborg.tests.nova import stack as nova_stack

pytestmark = pytest.mark.functional

HOSTS = ('compute-1', 'compute-2')
#: each host: one fake device with two MDEV handles, so capacity is four.
HANDLES = 2
#: in the slow-bind tests, every bind waits this long for its agent:
#: nova-compute must wait for the accelerator-request-bound event, not find
#: the ARQs bound at once.
PREPARE_DELAY = 3


@pytest.fixture(scope='module')
def stack(tmp_path_factory):
    with nova_stack.NovaStack(
            tmp_path_factory.mktemp('nova'), HOSTS, devices=1,
            handles=HANDLES) as found:
        yield found


@pytest.fixture
def servers(stack):
    """Servers a test boots, deleted after it whatever happened."""
    made = []
    yield made
    for server_id in made:
        if stack.exists(server_id):
            stack.delete(server_id, 'admin')
    for server_id in made:
        check_released(stack, server_id)


def _bound_handles(stack):
    """{attach handle: [ARQ uuid]} of every ARQ holding one; a handle is
    its device's provider and its attach info (both hosts' fake devices
    have the same PCI addresses)."""
    held = {}
    for arq in stack.cyborg('GET', '/v2/accelerator_requests')['arqs']:
        if arq['state'] in ('Bound', 'BindStarted') and \
                arq.get('attach_handle_info'):
            handle = (arq['device_rp_uuid'],
                      repr(sorted(arq['attach_handle_info'].items())))
            held.setdefault(handle, []).append(arq['uuid'])
    return held


def check_bound(stack, server):
    """The server's one ARQ is Bound on the server's host, its handle is
    held by it alone, and Placement holds the device below that host."""
    host = server['OS-EXT-SRV-ATTR:host']
    arqs = stack.arqs_of(server['id'])
    assert [(a['state'], a['hostname'], a['instance_uuid']) for a in arqs] \
        == [('Bound', host, server['id'])], arqs
    held = _bound_handles(stack)
    assert all(len(uuids) == 1 for uuids in held.values()), held
    allocations = stack.allocations_of(server['id'])
    device = arqs[0]['device_rp_uuid']
    assert allocations.get(device) == {nova_stack.RESOURCE_CLASS: 1}, \
        allocations
    root = stack.placement_get('/resource_providers/%s' % device)[
        'root_provider_uuid']
    node = stack.placement_get('/resource_providers?name=%s' % host)[
        'resource_providers']
    assert [n['uuid'] for n in node] == [root]
    assert allocations[root] == {'VCPU': 1, 'MEMORY_MB': 64, 'DISK_GB': 1}
    return arqs[0]


def check_released(stack, server_id):
    assert stack.arqs_of(server_id) == []
    assert stack.allocations_of(server_id) == {}


def test_create_and_delete(stack, servers):
    server = stack.boot()
    servers.append(server['id'])
    check_bound(stack, server)
    stack.delete(server['id'])
    check_released(stack, server['id'])


def test_a_slow_bind_goes_active_through_the_bound_event(stack, servers):
    with stack.prepare_delay(PREPARE_DELAY):
        started = time.monotonic()
        server = stack.boot(name='slow')
        took = time.monotonic() - started
    servers.append(server['id'])
    # The bind did take its delay (the agents restarted with it), and the
    # event ended Nova's wait: not [DEFAULT] arq_binding_timeout (300 s).
    assert PREPARE_DELAY <= took < PREPARE_DELAY + 5, took
    assert any('takes %.1f s' % PREPARE_DELAY in agent.log()
               for agent in stack.agents.values())
    arq = check_bound(stack, server)
    # NOTE(tests): nova-api logs each external event it takes; the boot
    # ended with it, not with [DEFAULT] arq_binding_timeout (300 s).
    assert 'Creating event accelerator-request-bound:%s' % arq['uuid'] \
        in stack.nova.api.log()


def test_a_server_without_accelerators_never_reaches_cyborg(stack, servers):
    server = stack.boot(flavor=stack.plain_flavor)
    servers.append(server['id'])
    assert stack.arqs_of(server['id']) == []
    stack.delete(server['id'])


@pytest.mark.parametrize('body, status', [
    ({'reboot': {'type': 'SOFT'}}, 'ACTIVE'),
    ({'reboot': {'type': 'HARD'}}, 'ACTIVE'),
    ({'os-stop': None}, 'SHUTOFF'),
    ({'os-start': None}, 'ACTIVE'),
    ({'pause': None}, 'PAUSED'),
    ({'unpause': None}, 'ACTIVE'),
    ({'lock': None}, 'ACTIVE'),
    ({'unlock': None}, 'ACTIVE'),
], ids=lambda value: value if isinstance(value, str) else next(iter(value)))
def test_lifecycle_keeps_the_same_bound_arq(stack, body, status,
                                            lifecycle_server):
    before = lifecycle_server['arq']
    server = stack.action(lifecycle_server['id'], body, status=status)
    after = check_bound(stack, server)
    assert (after['uuid'], after['attach_handle_info']) == (
        before['uuid'], before['attach_handle_info'])


@pytest.fixture(scope='module')
def lifecycle_server(stack):
    server = stack.boot(name='lifecycle')
    try:
        yield {'id': server['id'], 'arq': check_bound(stack, server)}
    finally:
        stack.delete(server['id'], 'admin')


def test_several_servers_at_once_take_every_handle_once(stack, servers):
    made = [stack.boot(name='many-%d' % i, wait=None)['id']
            for i in range(3)]
    servers.extend(made)
    for server_id in made:
        check_bound(stack, stack.wait_status(server_id, 'ACTIVE'))


def test_one_more_than_capacity_is_no_valid_host(stack, servers):
    free = len(HOSTS) * HANDLES - len(_bound_handles(stack))
    made = [stack.boot(name='full-%d' % i, wait=None)['id']
            for i in range(free)]
    servers.extend(made)
    for server_id in made:
        check_bound(stack, stack.wait_status(server_id, 'ACTIVE'))
    extra = stack.boot(name='one-too-many', wait='ERROR')
    servers.append(extra['id'])
    assert 'No valid host' in extra['fault']['message'], extra['fault']
    assert stack.arqs_of(extra['id']) == []
    assert stack.allocations_of(extra['id']) == {}


def test_rebuild_binds_on_the_same_host(stack, servers):
    server = stack.boot(name='rebuilt')
    servers.append(server['id'])
    check_bound(stack, server)
    rebuilt = stack.action(server['id'], {'rebuild': {
        'imageRef': stack.image}})
    assert rebuilt['OS-EXT-SRV-ATTR:host'] == server['OS-EXT-SRV-ATTR:host']
    check_bound(stack, rebuilt)


@pytest.mark.parametrize('body', [
    {'createImage': {'name': 'snap'}},
    {'createBackup': {'name': 'back', 'backup_type': 'daily',
                      'rotation': 1}},
], ids=['snapshot', 'backup'])
def test_snapshot_and_backup_leave_the_arq_alone(stack, servers, body):
    server = stack.boot(name='imaged')
    servers.append(server['id'])
    before = check_bound(stack, server)
    stack.action(server['id'], body)
    after = check_bound(stack, stack.server(server['id']))
    assert after['uuid'] == before['uuid']


def test_rescue_and_unrescue_keep_the_arq(stack, servers):
    server = stack.boot(name='rescued')
    servers.append(server['id'])
    before = check_bound(stack, server)
    rescued = stack.action(server['id'], {'rescue': {}}, status='RESCUE')
    assert check_bound(stack, rescued)['uuid'] == before['uuid']
    back = stack.action(server['id'], {'unrescue': None})
    assert check_bound(stack, back)['uuid'] == before['uuid']


def test_shelve_offload_releases_and_unshelve_binds_anew(stack, servers):
    server = stack.boot(name='shelved')
    servers.append(server['id'])
    before = check_bound(stack, server)
    # NOTE(tests): shelved_offload_time is 0 by default: Nova offloads at
    # once, and the offload deletes the ARQs.
    stack.action(server['id'], {'shelve': None},
                 status='SHELVED_OFFLOADED')
    check_released(stack, server['id'])
    back = stack.action(server['id'], {'unshelve': None})
    after = check_bound(stack, back)
    assert after['uuid'] != before['uuid']


def test_delete_while_building_leaves_nothing(stack, servers):
    with stack.prepare_delay(PREPARE_DELAY):
        server = stack.boot(name='short-lived', wait=None)
        servers.append(server['id'])
        stack.delete(server['id'])
    check_released(stack, server['id'])


#: actions Nova refuses (400, ForbiddenWithAccelerators) for a server
#: with accelerators.
REFUSED = {
    'suspend': lambda stack: {'suspend': None},
    'resize': lambda stack: {'resize': {'flavorRef': stack.plain_flavor}},
    'migrate': lambda stack: {'migrate': None},
    'live-migrate': lambda stack: {'os-migrateLive': {
        'host': None, 'block_migration': 'auto'}},
}


@pytest.mark.parametrize('action', sorted(REFUSED))
def test_nova_refuses_what_it_cannot_do_with_accelerators(
        stack, action, lifecycle_server):
    before = stack.arqs_of(lifecycle_server['id'])
    refused = stack.nova_call('POST', '/servers/%s/action'
                              % lifecycle_server['id'], 'admin', ok=(400,),
                              json=REFUSED[action](stack))
    assert 'accelerators' in refused['badRequest']['message'], refused
    assert stack.arqs_of(lifecycle_server['id']) == before
    check_bound(stack, stack.wait_status(lifecycle_server['id'], 'ACTIVE'))


def test_evacuate_binds_a_new_arq_on_the_other_host(stack, servers):
    server = stack.boot(name='evacuated')
    servers.append(server['id'])
    old = check_bound(stack, server)
    source = server['OS-EXT-SRV-ATTR:host']
    with stack.compute_down(source):
        stack.nova_call('POST', '/servers/%s/action' % server['id'],
                        'admin', json={'evacuate': {}})
        # NOTE(tests): from 2.95 an evacuated server stays stopped.
        moved = stack.wait_status(server['id'], 'SHUTOFF')
        assert moved['OS-EXT-SRV-ATTR:host'] != source
        new = check_bound(stack, moved)
        assert new['uuid'] != old['uuid']
    # NOTE(tests): the source compute, back, drops what it held there.
    stack.wait_allocations_only_on(server['id'],
                                   moved['OS-EXT-SRV-ATTR:host'])
    assert old['uuid'] not in {a['uuid'] for a in stack.cyborg(
        'GET', '/v2/accelerator_requests')['arqs']}
