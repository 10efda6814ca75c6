"""Database and broker outages, conductors stopped or killed mid-request.

One deployment of two conductors serves every test; its database and
RabbitMQ are reached through TCP proxies that the tests cut. The
conductor-killing test runs last.
"""

import json
import os
import re
import signal
import threading
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg.tests import deployments
from cyborg.tests import faults
from cyborg.tests import processes

pytestmark = pytest.mark.functional

RPC_TIMEOUT = 3
#: [api] rpc_call_monitor_timeout: a read's conductor silent this long is
#: sent it again.
CALL_MONITOR = 2
#: Seconds an answer may take beyond [api] rpc_timeout: a send to a broker
#: that went away reconnects once (oslo.messaging's kombu_reconnect_delay
#: and rabbit_retry_interval, 1 s each) before it fails.
MARGIN = 2
TAKEOVER_AFTER = 5
PREPARE_DELAY = 4
RECOVERY = 60
ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'p1', 'X-User-Id': 'u1'}
NOVA = {'X-Roles': 'member,reader', 'X-Project-Id': 'p1', 'X-User-Id': 'u1',
        'X-Service-Roles': 'service'}
OUTAGE_START = 'The database is unavailable'
OUTAGE_END = re.compile(r'The database is available again; (\d+) requests')
#: What a test measured, printed at the end of the module (pytest -s).
MEASURED = {}


@pytest.fixture(scope='module')
def nova():
    with deployments.FakeNova() as found:
        yield found


@pytest.fixture(scope='module')
def cloud(tmp_path_factory, nova):
    sections = {
        'api': {'rpc_timeout': RPC_TIMEOUT,
                'rpc_call_monitor_timeout': CALL_MONITOR},
        # NOTE(tests): binds take ready devices only.
        'conductor': {'heartbeat_interval': 1,
                      'takeover_after': TAKEOVER_AFTER,
                      'auto_activate_new_devices': True},
        'fake_driver': {'prepare_delay': PREPARE_DELAY,
                        'attach_type': 'MDEV'},
        'nova': nova.section(),
    }
    with deployments.services(tmp_path_factory.mktemp('outages'),
                              conductors=2, proxied=True,
                              sections=sections) as found:
        yield found
    print('\nmeasured: %s' % json.dumps(MEASURED, indent=1, sort_keys=True))


def _timed(method, cloud, path, headers=ADMIN, **kwargs):
    began = time.monotonic()
    resp = requests.request(method, cloud.url + path, headers=headers,
                            timeout=RPC_TIMEOUT + 30, **kwargs)
    return resp, time.monotonic() - began


def _fault(resp):
    return faults.fault_of(resp.json())['faultstring']


def _assert_unavailable(resp, took, words):
    assert resp.status_code == 503, resp.text
    assert int(resp.headers['Retry-After']) > 0
    assert words in _fault(resp), _fault(resp)
    assert took < RPC_TIMEOUT + MARGIN, took


def _recovered(cloud, path='/v2/device_profiles'):
    """Seconds until ``path`` answers 200 again."""
    began = time.monotonic()

    def ok():
        resp = requests.get(cloud.url + path, headers=ADMIN,
                            timeout=RPC_TIMEOUT + 30)
        return resp.status_code == 200
    processes.wait_for(ok, RECOVERY, interval=0.2, what='%s to answer'
                       % path)
    return round(time.monotonic() - began, 1)


def _logs_since(procs, offsets):
    return {p.name: p.log()[offsets[p.name]:] for p in procs}


def test_database_outage_answers_503_and_logs_edges(cloud):
    assert _recovered(cloud) < 5
    offsets = {p.name: len(p.log()) for p in cloud.conductors}
    cloud.proxies['database'].cut()
    refused = 0
    took = {}
    try:
        for path in ['/v2/device_profiles', '/v2/accelerator_requests'] * 3:
            resp, took[path] = _timed('GET', cloud, path)
            _assert_unavailable(resp, took[path], 'database')
            refused += 1
        # NOTE(tests): heartbeats and periodic tasks meet the outage too;
        # each conductor must have said so once, however often.
        time.sleep(2)
        logs = _logs_since(cloud.conductors, offsets)
    finally:
        cloud.proxies['database'].restore()
    for name, text in logs.items():
        errors = [line for line in text.splitlines() if ' ERROR ' in line]
        assert len(errors) == 1 and OUTAGE_START in errors[0], (name, text)
        assert 'Traceback' not in text, (name, text)
    MEASURED['db_outage_503_s'] = round(max(took.values()), 2)
    MEASURED['db_recovery_s'] = _recovered(cloud)
    assert _timed('GET', cloud, '/v2/accelerator_requests')[0].status_code \
        == 200

    def ended():
        found = [OUTAGE_END.search(t) for t in
                 _logs_since(cloud.conductors, offsets).values()]
        return found if all(found) else None
    counted = processes.wait_for(ended, 30, what='the outage end INFO')
    assert sum(int(m.group(1)) for m in counted) >= refused
    for text in _logs_since(cloud.conductors, offsets).values():
        assert len(OUTAGE_END.findall(text)) == 1, text


def test_broker_outage_answers_503_then_recovers(cloud):
    assert _recovered(cloud) < 5
    cloud.proxies['transport'].cut()
    took = []
    try:
        for path in ['/v2/device_profiles', '/v2/accelerator_requests'] * 2:
            resp, seconds = _timed('GET', cloud, path)
            _assert_unavailable(resp, seconds, 'conductor')
            took.append(seconds)
    finally:
        cloud.proxies['transport'].restore()
    MEASURED['broker_outage_503_s'] = round(max(took), 2)
    MEASURED['broker_recovery_s'] = _recovered(cloud)
    # The agent and the conductors reconnected too: a report goes through.
    agent = cloud.process('cyborg-agent')
    mark = len(agent.log())
    processes.wait_for(lambda: cloud.deployables(), RECOVERY,
                       what='the deployables')
    assert all(p.alive() for p in cloud.procs), agent.log()[mark:]


def test_api_started_without_the_broker(cloud):
    api = cloud.process('cyborg-api')
    assert api.stop() == 0
    cloud.proxies['transport'].cut()
    try:
        api.start()
        processes.wait_for(
            lambda: 'cyborg-api listening on' in api.log()[api.offset:],
            30, interval=0.05, what='the API to listen')
        took = []
        for path in ['/v2/device_profiles', '/v2/accelerator_requests']:
            resp, seconds = _timed('GET', cloud, path)
            _assert_unavailable(resp, seconds, 'conductor')
            took.append(seconds)
    finally:
        cloud.proxies['transport'].restore()
    MEASURED['api_never_connected_503_s'] = round(max(took), 2)
    MEASURED['api_never_connected_recovery_s'] = _recovered(cloud)


def _rp_uuid(cloud):
    deps = cloud.deployables()
    (rp,) = [d['rp_uuid'] for d in deps
             if d['name'] == '%s_FakeDevice' % cloud.host]
    return rp


def _new_arq(cloud):
    """(ARQ uuid, bind patch) for a new instance of a one-FPGA profile."""
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    made, _took = _timed('POST', cloud, '/v2/device_profiles', json=[
        {'name': name, 'groups': [{'resources:FPGA': '1'}]}])
    assert made.status_code == 201, made.text
    made, _took = _timed('POST', cloud, '/v2/accelerator_requests',
                         headers=NOVA, json={'device_profile_name': name})
    assert made.status_code == 201, made.text
    (arq,) = made.json()['arqs']
    instance = str(uuid.uuid4())
    patch = {arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': cloud.host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': _rp_uuid(cloud)},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]}
    return arq['uuid'], instance, patch


def _state(cloud, arq):
    resp, _took = _timed('GET', cloud, '/v2/accelerator_requests/' + arq)
    return resp.json()['state'] if resp.status_code == 200 else None


def _wait_bound(cloud, arq, timeout):
    began = time.monotonic()
    processes.wait_for(lambda: _state(cloud, arq) == 'Bound', timeout,
                       interval=0.2, what='ARQ %s to be Bound' % arq)
    return time.monotonic() - began


def _restart(proc):
    """Stop ``proc`` unless it is dead, and start it again."""
    proc.stop()
    proc.start()
    processes.wait_for(lambda: 'started on host' in proc.log()[proc.offset:],
                       60, interval=0.05, what='%s to listen' % proc.name)


def test_bind_without_a_conductor_is_retried(cloud, nova):
    arq, instance, patch = _new_arq(cloud)
    nova.on_host.add(instance)
    for proc in cloud.conductors:
        assert proc.stop() == 0
    try:
        resp, took = _timed('PATCH', cloud, '/v2/accelerator_requests',
                            headers=NOVA, json=patch)
        _assert_unavailable(resp, took, 'conductor')
    finally:
        for proc in cloud.conductors:
            _restart(proc)
    MEASURED['bind_no_conductor_503_s'] = round(took, 2)
    resp, _took = _timed('PATCH', cloud, '/v2/accelerator_requests',
                         headers=NOVA, json=patch)
    assert resp.status_code == 202, resp.text
    _wait_bound(cloud, arq, PREPARE_DELAY + 30)
    again, _took = _timed('PATCH', cloud, '/v2/accelerator_requests',
                          headers=NOVA, json=patch)
    assert again.status_code == 202, again.text
    nova.wait_events(instance, 1)
    time.sleep(1)
    assert sum(len(e) for _h, e in nova.events_of(instance)) == 1
    assert _state(cloud, arq) == 'Bound'


#: [DEFAULT] rpc_deadline_margin's default: what a conductor adds to a
#: call's deadline before it judges it passed.
DEADLINE_MARGIN = 2


def _arqs_of(engine, profile):
    with engine.connect() as conn:
        return conn.execute(sa.text(
            'SELECT a.uuid FROM accelerator_requests a JOIN device_profiles '
            'p ON p.id = a.device_profile_id WHERE p.name = :n'),
            {'n': profile}).scalars().all()


def test_a_create_the_api_gave_up_on_leaves_nothing(cloud):
    """A create answered 503 while the conductors were stopped is dropped
    when they wake, instead of leaving orphan ARQs."""
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    made, _took = _timed('POST', cloud, '/v2/device_profiles', json=[
        {'name': name, 'groups': [{'resources:FPGA': '1'}]}])
    assert made.status_code == 201, made.text
    offsets = {p.name: len(p.log()) for p in cloud.conductors}
    engine = sa.create_engine(cloud.db_url)
    for proc in cloud.conductors:
        proc.proc.send_signal(signal.SIGSTOP)
    try:
        sent = time.monotonic()
        resp, took = _timed('POST', cloud, '/v2/accelerator_requests',
                            headers=NOVA, json={'device_profile_name': name})
        _assert_unavailable(resp, took, 'conductor')
        request = resp.headers['x-openstack-request-id']
        # NOTE(tests): woken after the call's deadline and its margin, as
        # a conductor SIGSTOPped for a while or stuck in a long pause.
        time.sleep(max(0.0, sent + RPC_TIMEOUT + DEADLINE_MARGIN + 1.5 -
                       time.monotonic()))
    finally:
        for proc in cloud.conductors:
            proc.proc.send_signal(signal.SIGCONT)
    try:
        dropped = 'Dropped RPC call create_arqs of request %s' % request

        def logged():
            found = [text for text in _logs_since(
                cloud.conductors, offsets).values() if dropped in text]
            return found if found else None
        found = processes.wait_for(logged, 30, what='the dropped call')
        # NOTE(tests): the API sent the create again when its first
        # conductor said nothing for rpc_call_monitor_timeout; each copy
        # reached a conductor past the deadline, and each was dropped.
        assert 1 <= sum(text.count(dropped) for text in found) <= 2, found
        for text in found:
            assert 'from device profile %s' % name not in text, text
        MEASURED['late_create_dropped_after_s'] = round(
            time.monotonic() - sent, 1)
        assert _recovered(cloud) < 10
        assert _arqs_of(engine, name) == []
        # The conductors serve the same create at once again.
        made, _took = _timed('POST', cloud, '/v2/accelerator_requests',
                             headers=NOVA, json={'device_profile_name': name})
        assert made.status_code == 201, made.text
        assert len(_arqs_of(engine, name)) == 1
    finally:
        engine.dispose()


def _until_resent(cloud, resent, requests):
    """Send ``requests()`` (a round of calls; it returns their times) with
    the last conductor stopped, until the API logs ``resent``; returns
    every call's time."""
    api = cloud.process('cyborg-api')
    victim = cloud.conductors[-1]
    took = []
    for _round in range(6):
        mark = len(api.log())
        victim.proc.send_signal(signal.SIGSTOP)
        try:
            # NOTE(tests): one call of a round is dealt to the stopped one
            # unless an agent's call took its one message first; then the
            # next round tries again.
            took.extend(requests())
        finally:
            victim.proc.send_signal(signal.SIGCONT)
        if resent in api.log()[mark:]:
            break
    assert resent in api.log()[mark:], (took, api.log()[mark:][-3000:])
    # NOTE(tests): the silence it takes to tell a stopped conductor, then
    # the other's answer; never rpc_timeout's 503.
    assert CALL_MONITOR <= max(took) < RPC_TIMEOUT + MARGIN, took
    return took


def test_a_read_dealt_to_a_stopped_conductor_goes_to_the_other(cloud):
    """A read a stopped conductor holds is sent again after [api]
    rpc_call_monitor_timeout and answered by the other conductor, never a
    503: RabbitMQ deals one message (the prefetch of 1) to the stopped
    one, until it wakes or its connection is found dead."""
    def reads():
        took = []
        for path in ['/v2/device_profiles', '/v2/accelerator_requests',
                     '/v2/deployables', '/v2/devices']:
            resp, seconds = _timed('GET', cloud, path)
            assert resp.status_code == 200, resp.text
            took.append(seconds)
        return took

    took = _until_resent(cloud, 'sending it again', reads)
    MEASURED['read_to_stopped_conductor_s'] = round(max(took), 1)


def test_a_create_dealt_to_a_stopped_conductor_is_made_once(cloud):
    """A create a stopped conductor holds is sent again with its key and
    answered by the other conductor; once the stopped one wakes (and
    whether or not it runs its copy), each create made its ARQs once."""
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    made, _took = _timed('POST', cloud, '/v2/device_profiles', json=[
        {'name': name, 'groups': [{'resources:FPGA': '2'}]}])
    assert made.status_code == 201, made.text
    answered = []

    def creates():
        took = []
        for _create in range(4):
            resp, seconds = _timed(
                'POST', cloud, '/v2/accelerator_requests', headers=NOVA,
                json={'device_profile_name': name})
            assert resp.status_code == 201, resp.text
            answered.extend(arq['uuid'] for arq in resp.json()['arqs'])
            took.append(seconds)
        return took

    took = _until_resent(cloud, 'took up create_arqs within', creates)
    # NOTE(tests): the woken conductor's copy, within its deadline or not,
    # adds nothing; it has had the time of a takeover to run.
    time.sleep(RPC_TIMEOUT)
    engine = sa.create_engine(cloud.db_url)
    try:
        assert sorted(_arqs_of(engine, name)) == sorted(answered)
    finally:
        engine.dispose()
    assert len(answered) == 2 * len(took)


def test_a_conductor_restarted_gracefully_under_load_loses_no_call(cloud):
    """A rolling restart's SIGTERM: the conductor stops taking calls,
    finishes those it took and answers them; every other call goes to the
    other conductor. No request fails, the deletes sent once included."""
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    made, _took = _timed('POST', cloud, '/v2/device_profiles', json=[
        {'name': name, 'groups': [{'resources:FPGA': '1'}]}])
    assert made.status_code == 201, made.text
    stopping = threading.Event()
    answered = []

    def client():
        arqs = '/v2/accelerator_requests'
        while not stopping.is_set():
            resp, _took = _timed('GET', cloud, arqs)
            answered.append(('read', resp.status_code))
            resp, _took = _timed('POST', cloud, arqs, headers=NOVA,
                                 json={'device_profile_name': name})
            answered.append(('create', resp.status_code))
            if resp.status_code == 201:
                uuids = ','.join(a['uuid'] for a in resp.json()['arqs'])
                resp, _took = _timed('DELETE', cloud, arqs, headers=NOVA,
                                     params={'arqs': uuids})
                answered.append(('delete', resp.status_code))

    clients = [threading.Thread(target=client) for _ in range(4)]
    for thread in clients:
        thread.start()
    victim = cloud.conductors[-1]
    try:
        # NOTE(tests): the victim was taking the load's calls when stopped.
        processes.wait_for(
            lambda: 'Created 1 accelerator requests' in
            victim.log()[victim.offset:], 30, interval=0.1,
            what='%s to take a create' % victim.name)
        time.sleep(1)
        assert victim.stop(signal.SIGTERM) == 0, victim.log()[-3000:]
        time.sleep(2)
        victim.start()
        processes.wait_for(
            lambda: 'started on host' in victim.log()[victim.offset:], 60,
            interval=0.05, what='%s to start again' % victim.name)
        time.sleep(2)
    finally:
        stopping.set()
        for thread in clients:
            thread.join(RPC_TIMEOUT + 60)
    failed = [(kind, status) for kind, status in answered
              if status not in (200, 201, 204)]
    assert answered and not failed, failed
    MEASURED['graceful_restart_calls'] = len(answered)


def _owner(engine, arq):
    with engine.connect() as conn:
        return conn.execute(sa.text(
            'SELECT owner FROM accelerator_requests WHERE uuid = :u'),
            {'u': arq}).scalar()


def test_a_killed_conductors_bind_is_finished(cloud, nova):
    arq, instance, patch = _new_arq(cloud)
    nova.on_host.add(instance)
    agent = cloud.process('cyborg-agent')
    mark = len(agent.log())
    engine = sa.create_engine(cloud.db_url)
    try:
        resp, _took = _timed('PATCH', cloud, '/v2/accelerator_requests',
                             headers=NOVA, json=patch)
        assert resp.status_code == 202, resp.text
        owner = processes.wait_for(lambda: _owner(engine, arq), 10,
                                   interval=0.05, what='the bind owner')
        (victim,) = [p for p in cloud.conductors
                     if 'host = %s\n' % owner in open(p.command[-1]).read()]
        processes.wait_for(
            lambda: 'Preparing handle' in agent.log()[mark:], 20,
            interval=0.05, what='the agent to prepare the handle')
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        took = _wait_bound(cloud, arq, TAKEOVER_AFTER + 10)
        MEASURED['takeover_bound_after_kill_s'] = round(took, 1)
        nova.wait_events(instance, 1)
        time.sleep(2)
        assert sum(len(e) for _h, e in nova.events_of(instance)) == 1
        with engine.connect() as conn:
            handles = conn.execute(sa.text(
                'SELECT h.uuid FROM accelerator_requests a JOIN '
                'attach_handles h ON h.id = a.attach_handle_id '
                'WHERE a.uuid = :u'), {'u': arq}).scalars().all()
            in_use = conn.execute(sa.text(
                'SELECT COUNT(*) FROM attach_handles WHERE in_use'
            )).scalar()
            bound = conn.execute(sa.text(
                "SELECT COUNT(*) FROM accelerator_requests WHERE state = "
                "'Bound' AND attach_handle_id IS NOT NULL")).scalar()
    finally:
        engine.dispose()
    (handle,) = handles
    # Each bound ARQ holds its own handle; none is held by no ARQ.
    assert in_use == bound
    log = agent.log()[mark:]
    assert log.count('Preparing handle %s' % handle) == 1, log
    assert log.count('Prepared handle %s' % handle) == 1, log
    assert 'already prepared for ARQ %s' % arq in log, log
    state = os.path.join(os.path.dirname(agent.log_path),
                         'agent-%s-handles.json' % cloud.host)
    with open(state) as cache:
        holders = json.load(cache)['holders']
    assert holders[handle] == arq
    assert len(set(holders.values())) == len(holders)
    survivor = next(p for p in cloud.conductors if p is not victim)
    assert 'Took over the bind of ARQ %s' % arq in survivor.log()

    # Nova deletes the instance: the handle is released once, no mdev left.
    resp, _took = _timed('DELETE', cloud, '/v2/accelerator_requests'
                         '?instance=' + instance, headers=NOVA)
    assert resp.status_code == 204, resp.text
    processes.wait_for(
        lambda: 'Releasing handle %s' % handle in agent.log()[mark:], 30,
        what='the agent to release the handle')
    with open(state) as cache:
        assert handle not in json.load(cache)['holders']
    assert agent.log()[mark:].count('Releasing handle %s' % handle) == 1
    _restart(victim)
