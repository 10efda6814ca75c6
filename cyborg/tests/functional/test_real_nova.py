"""Nova 34 from PyPI, unpatched, manages servers with accelerators.

Every process is real (``cyborg.tests.nova.stack``): Keystone, Placement,
Glance, Cyborg's API, conductor and two agents, and Nova's API, conductor,
scheduler and two nova-compute services with the fake virt driver. Each
step checks Cyborg's side as Nova's own functional tests check Placement:
the server's ARQs are Bound to it and to its host, no handle is held
twice, and Placement's allocations name the device on that host.
"""

import json
import os
import re
import sys
import time

import pytest

from cyborg.tests import keystone as keystone_mod
from cyborg.tests import processes
from cyborg.tests.nova import stack as nova_stack

pytestmark = pytest.mark.functional

BENCH_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                         'tools', 'bench')
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


def check_bound(stack, server, only=True):
    """The server's one ARQ is Bound on the server's host, its handle is
    held by it alone, and Placement holds the device below that host (and,
    when ``only``, nothing else for the server)."""
    host = server['OS-EXT-SRV-ATTR:host']
    arqs = stack.arqs_of(server['id'])
    assert [(a['state'], a['hostname'], a['instance_uuid']) for a in arqs] \
        == [('Bound', host, server['id'])], arqs
    held = _bound_handles(stack)
    assert all(len(uuids) == 1 for uuids in held.values()), held
    allocations = stack.allocations_of(server['id'])
    device = arqs[0]['device_rp_uuid']
    root = stack.placement_get('/resource_providers/%s' % device)[
        'root_provider_uuid']
    node = stack.placement_get('/resource_providers?name=%s' % host)[
        'resource_providers']
    assert [n['uuid'] for n in node] == [root]
    assert allocations[device] == {nova_stack.RESOURCE_CLASS: 1}
    assert allocations[root] == {'VCPU': 1, 'MEMORY_MB': 64, 'DISK_GB': 1}
    # Nothing held anywhere else (a host it left, an earlier device).
    assert not only or set(allocations) == {device, root}, allocations
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


def test_a_failed_bind_ends_the_build_with_a_fault_naming_it(stack, servers):
    host = HOSTS[0]
    # NOTE(tests): the bind fails after the delay, once nova-compute waits
    # for its event: the failed event ends the wait (see nova.rst for a
    # bind that fails before nova-compute looks).
    with stack.fake_driver([host], prepare_delay=PREPARE_DELAY,
                           prepare_failure='no mdev left (injected)'):
        started = time.monotonic()
        server = stack.boot(name='bind-fails', user=keystone_mod.ADMIN,
                            availability_zone='nova:%s' % host,
                            wait='ERROR')
        took = time.monotonic() - started
        servers.append(server['id'])
    assert took < PREPARE_DELAY + 30, took
    assert 'Failure getting accelerator requests' in \
        server['fault']['message'], server['fault']
    # The conductor says why, without the agent's traceback (oslo.log adds
    # the summary of the exception being handled to the line).
    assert re.search(r'WARNING .* Bind of ARQ \S+ failed on %s: Driver fake '
                     r'failed: no mdev left \(injected\)(: [^\n]*)?\n\d{4}-'
                     % host, stack.conductor.log()), \
        stack.conductor.log()[-3000:]
    processes.wait_for(lambda: stack.arqs_of(server['id']) == [] and
                       stack.allocations_of(server['id']) == {},
                       nova_stack.TIMEOUT, interval=0.5,
                       what='the failed build\'s ARQ and allocations gone')


def test_a_failed_spawn_reschedules_with_a_new_arq_on_the_other_host(
        stack, servers):
    server = stack.boot(name='reschedule-me', wait=None)
    servers.append(server['id'])
    server = stack.wait_status(server['id'], 'ACTIVE')
    landed = server['OS-EXT-SRV-ATTR:host']
    failed = [host for host in HOSTS
              if 'the first spawn of reschedule-me fails' in
              stack.nova.computes[host].log()]
    # One spawn failed, on the other host; the ARQ Nova deleted there is
    # gone, and the one it made for this host is bound here.
    assert failed == [h for h in HOSTS if h != landed], failed
    check_bound(stack, server)
    assert len(stack.cyborg('GET', '/v2/accelerator_requests')['arqs']) \
        == len(_bound_handles(stack))


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


def _moved_from(stack, server_id, source):
    found = stack.server(server_id)
    assert found['status'] != 'ERROR', found.get('fault')
    if found['status'] == 'SHUTOFF' and \
            not found.get('OS-EXT-STS:task_state') and \
            found['OS-EXT-SRV-ATTR:host'] != source:
        return found
    return None


def test_evacuate_binds_a_new_arq_on_the_other_host(stack, servers):
    server = stack.boot(name='evacuated')
    servers.append(server['id'])
    old = check_bound(stack, server)
    source = server['OS-EXT-SRV-ATTR:host']
    with stack.compute_down(source):
        stack.nova_call('POST', '/servers/%s/action' % server['id'],
                        'admin', json={'evacuate': {}})
        # NOTE(tests): from 2.95 an evacuated server stays stopped; Nova
        # shows it SHUTOFF on the source host for a moment first.
        moved = processes.wait_for(
            lambda: _moved_from(stack, server['id'], source),
            nova_stack.TIMEOUT, interval=0.5,
            what='server %s to be SHUTOFF on another host' % server['id'])
        # NOTE(tests): the source host's allocations stay until its
        # compute comes back.
        new = check_bound(stack, moved, only=False)
        assert new['uuid'] != old['uuid']
    # NOTE(tests): the source compute, back, drops what it held there.
    stack.wait_allocations_only_on(server['id'],
                                   moved['OS-EXT-SRV-ATTR:host'])
    assert old['uuid'] not in {a['uuid'] for a in stack.cyborg(
        'GET', '/v2/accelerator_requests')['arqs']}


def test_boot_bench_at_tiny_size(stack, tmp_path, capsys):
    """tools/bench/nova_boot.py, on this module's stack, two boots each."""
    sys.path.insert(0, BENCH_DIR)
    try:
        import nova_boot
    finally:
        sys.path.remove(BENCH_DIR)
    out = tmp_path / 'figures.json'
    args = nova_boot.parse_args(['--boots', '2', '--json', str(out)])
    assert nova_boot.run(args, stack) == 0, capsys.readouterr().out
    figures = json.loads(out.read_text())['results']
    assert figures['accelerator']['boots'] == figures['plain']['boots'] == 2
    # Nova's ARQ create and bind at least, each timed by the access log.
    requests = figures['cyborg_requests_of_first_boot']
    assert 'POST /v2/accelerator_requests' in requests, requests
    assert 'PATCH /v2/accelerator_requests' in requests, requests
    assert figures['cyborg_ms']['p50'] > 0
    printed = capsys.readouterr().out
    assert re.search(r'^accelerator  2 boots: p50 \d+ ms', printed, re.M), \
        printed

