"""The three real processes over RabbitMQ with MariaDB and PostgreSQL.

agent → conductor → database → API, each in its own process. The API and
agent get no [database] section at all: they can only have read and written
through the conductor.
"""

import concurrent.futures
import json
import os
import signal
import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg.tests import backends
from cyborg.tests import faults
from cyborg.tests import processes

pytestmark = pytest.mark.functional

ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'p1', 'X-User-Id': 'u1'}


@pytest.fixture(scope='module', params=['mysql', 'postgresql'])
def stack(request, tmp_path_factory):
    backend = request.param
    tmp_path = tmp_path_factory.mktemp(backend)
    with backends.temp_database(backend) as db_url, \
            backends.temp_rabbit_vhost() as transport_url:
        host = 'node-%s' % uuid.uuid4().hex[:8]
        confs, port = processes.stack_configs(
            tmp_path, host, db_url, transport_url, {
                'agent': {'enabled_drivers': 'fake_driver',
                          'report_interval': 2},
                'fake_driver': {'device_count': 2,
                                'accelerators_per_device': 4},
            })
        procs = [processes.Process(name, conf, tmp_path)
                 for name, conf in confs.items()]
        try:
            yield {'url': 'http://127.0.0.1:%d' % port, 'host': host,
                   'db_url': db_url, 'procs': procs, 'backend': backend}
        finally:
            processes.stop_cleanly(procs)


def _get(stack, path, **headers):
    return requests.get(stack['url'] + path, headers=dict(ADMIN, **headers),
                        timeout=10)


def _devices(stack):
    resp = _get(stack, '/v2/devices')
    if resp.status_code != 200:
        return None
    devices = [d for d in resp.json()['devices']
               if d['hostname'] == stack['host']]
    return devices if len(devices) == 2 else None


def test_agent_report_is_served_by_the_api(stack):
    devices = processes.wait_for(lambda: _devices(stack), 90,
                                 what='the agent report in the API')
    for proc in stack['procs']:
        assert proc.alive(), proc.log()
    assert {d['type'] for d in devices} == {'FPGA'}
    assert {d['vendor'] for d in devices} == {'0xABCD'}
    assert all('status' not in d for d in devices)

    one = _get(stack, '/v2/devices/%s' % devices[0]['uuid'],
               **{'OpenStack-API-Version': 'accelerator 2.3'})
    assert one.status_code == 200
    # (inactive, as 2.3 names it)
    assert one.json()['status'] == 'maintaining'
    assert one.headers['OpenStack-API-Version'] == 'accelerator 2.3'

    deps = _get(stack, '/v2/deployables').json()['deployables']
    ours = sorted(d['name'] for d in deps
                  if d['name'].startswith(stack['host']))
    assert ours == ['%s_FakeDevice' % stack['host'],
                    '%s_FakeDevice1' % stack['host']]
    dep = _get(stack, '/v2/deployables/%s' % deps[0]['uuid']).json()
    assert dep['num_accelerators'] == 4
    assert {'rc': 'FPGA'} in json.loads(dep['attributes_list'])

    missing = _get(stack, '/v2/devices/%s' % uuid.uuid4(),
                   **faults.WITH_CODES)
    assert missing.status_code == 404
    assert faults.code_of(missing.json()) == 'cyborg.device.not_found'


def test_services_record_liveness(stack):
    processes.wait_for(lambda: _devices(stack), 90, what='agent report')
    engine = sa.create_engine(stack['db_url'])
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT host, "binary", report_count FROM services'
                if stack['backend'] == 'postgresql' else
                'SELECT host, `binary`, report_count FROM services')).all()
    finally:
        engine.dispose()
    seen = {(host, binary) for host, binary, _count in rows}
    assert ('ctl-1', 'cyborg-conductor') in seen
    assert (stack['host'], 'cyborg-agent') in seen


def test_lifecycle_and_agents_over_the_api(stack):
    devices = processes.wait_for(lambda: _devices(stack), 90,
                                 what='agent report')
    v24 = {'OpenStack-API-Version': 'accelerator 2.4'}
    url = '%s/v2/devices/%s/activate' % (stack['url'], devices[0]['uuid'])
    resp = requests.post(url, headers=dict(ADMIN, **v24), timeout=60)
    assert resp.status_code == 200, resp.text
    assert resp.json()['status'] == 'ready'
    again = requests.post(url, headers=dict(ADMIN, **v24), timeout=60)
    assert again.status_code == 409
    shown = _get(stack, '/v2/devices/%s' % devices[0]['uuid'], **v24).json()
    assert shown['status'] == 'ready' and shown['status_reason'] is None
    agents = _get(stack, '/v2/agents', **v24).json()['agents']
    (agent,) = [a for a in agents if a['host'] == stack['host']]
    assert agent['status'] == 'up' and agent['drivers'] == ['fake_driver']


def test_concurrent_binds_never_share_a_handle(stack):
    """Nova's sequence, many instances at once, on a provider of 4 handles.
    """
    processes.wait_for(lambda: _devices(stack), 90, what='agent report')
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    created = requests.post(stack['url'] + '/v2/device_profiles', json=[
        {'name': name, 'groups': [{'resources:FPGA': '1'}]}],
        headers=ADMIN, timeout=10)
    assert created.status_code == 201, created.text
    deps = _get(stack, '/v2/deployables').json()['deployables']
    (rp_uuid,) = [d['rp_uuid'] for d in deps
                  if d['name'] == '%s_FakeDevice' % stack['host']]
    # NOTE(tests): the user's token (Keystone expands member to reader)
    # and Nova's service token.
    nova = {'X-Roles': 'member,reader', 'X-Project-Id': 'p1',
            'X-User-Id': 'u1', 'X-Service-Roles': 'service'}
    instances = [str(uuid.uuid4()) for _ in range(10)]

    def boot(instance):
        made = requests.post(stack['url'] + '/v2/accelerator_requests',
                             json={'device_profile_name': name},
                             headers=nova, timeout=30)
        assert made.status_code == 201, made.text
        (arq,) = made.json()['arqs']
        ops = [{'op': 'add', 'path': '/hostname', 'value': stack['host']},
               {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
               {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        resp = requests.patch(stack['url'] + '/v2/accelerator_requests',
                              json={arq['uuid']: ops}, headers=nova,
                              timeout=30)
        assert resp.status_code == 202, resp.text

        def resolved():
            got = _get(stack, '/v2/accelerator_requests?instance=%s'
                       '&bind_state=resolved' % instance)
            return got.json()['arqs'] if got.status_code == 200 else None
        return processes.wait_for(resolved, 30, what='resolved ARQs')[0]

    with concurrent.futures.ThreadPoolExecutor(len(instances)) as pool:
        arqs = list(pool.map(boot, instances))
    bound = [a for a in arqs if a['state'] == 'Bound']
    assert len(bound) == 4
    assert {a['state'] for a in arqs} == {'Bound', 'BindFailed'}
    assert len({json.dumps(a['attach_handle_info'], sort_keys=True)
                for a in bound}) == 4
    for instance in instances:
        resp = requests.delete(
            stack['url'] + '/v2/accelerator_requests?instance=' + instance,
            headers=nova, timeout=30)
        assert resp.status_code == 204, resp.text


# NOTE(tests): strings a database may refuse or mangle: a lone surrogate
# (no UTF-8 for it; SQLite's driver raises), a NUL (PostgreSQL refuses
# it), one longer than any column, and a four-byte character (MariaDB's
# three-byte utf8 would refuse it; the tables are utf8mb4).
UNSTORABLE = {'a lone surrogate (U+D800)': '\ud800',
              'a NUL character': 'a\x00b'}
TOO_LONG = 'x' * 70000
FOUR_BYTES = '\U0001F680'


def _writes(stack, dep_uuid, arq_uuid):
    """(name, method, path, version, body of a string) of each write a
    user's string reaches."""
    def bind(text):
        return {arq_uuid: [
            {'op': 'add', 'path': '/hostname', 'value': text},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': str(uuid.uuid4())},
            {'op': 'add', 'path': '/instance_uuid',
             'value': str(uuid.uuid4())}]}
    return [
        ('profile name', 'POST', '/v2/device_profiles', None,
         lambda text: [{'name': text, 'groups': [{'resources:FPGA': '1'}]}]),
        ('profile description', 'POST', '/v2/device_profiles', None,
         lambda text: [{'name': 'dp-%s' % uuid.uuid4().hex[:8],
                        'description': text,
                        'groups': [{'resources:FPGA': '1'}]}]),
        ('profile group value', 'POST', '/v2/device_profiles', None,
         lambda text: [{'name': 'dp-%s' % uuid.uuid4().hex[:8],
                        'groups': [{'resources:FPGA': '1',
                                    'accel:note': text}]}]),
        ('ARQ profile name', 'POST', '/v2/accelerator_requests', None,
         lambda text: {'device_profile_name': text}),
        ('attribute value', 'POST', '/v2/attributes', '2.4',
         lambda text: {'deployable_uuid': dep_uuid,
                       'key': 'k%s' % uuid.uuid4().hex[:8], 'value': text}),
        ('attribute key', 'POST', '/v2/attributes', '2.4',
         lambda text: {'deployable_uuid': dep_uuid, 'key': text,
                       'value': 'v'}),
        ('/v1 accelerator name', 'POST', '/v1/accelerators', None,
         lambda text: {'name': text}),
        ('bind hostname', 'PATCH', '/v2/accelerator_requests', None, bind),
    ]


def _send(stack, method, path, version, body):
    # NOTE(tests): an administrator who is also a member (ARQs are made by
    # members), with Nova's service token (a bind needs it).
    headers = dict(ADMIN, **{'X-Roles': 'admin,member,reader',
                             'X-Service-Roles': 'service'})
    if version:
        headers['OpenStack-API-Version'] = 'accelerator %s' % version
    return requests.request(method, stack['url'] + path, json=body,
                            headers=headers, timeout=30)


def _rows(stack):
    """What the writes above could leave: profiles, attributes, /v1
    records and the test ARQ's state."""
    v24 = {'OpenStack-API-Version': 'accelerator 2.4'}
    return (sorted(p['name'] for p in _get(
                stack, '/v2/device_profiles').json()['device_profiles']),
            sorted(a['key'] for a in _get(
                stack, '/v2/attributes', **v24).json()['attributes']),
            sorted(a['uuid'] for a in _get(
                stack, '/v1/accelerators').json()['accelerator']),
            sorted((a['uuid'], a['state']) for a in _get(
                stack, '/v2/accelerator_requests').json()['arqs']))


def test_unstorable_strings_are_a_400_naming_the_field(stack):
    """On MariaDB and PostgreSQL, what no column can hold is refused by
    field before anything is written, and a four-byte character is kept
    as it was sent; never a 500."""
    processes.wait_for(lambda: _devices(stack), 90, what='agent report')
    deps = _get(stack, '/v2/deployables').json()['deployables']
    (dep_uuid,) = [d['uuid'] for d in deps
                   if d['name'] == '%s_FakeDevice' % stack['host']]
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    made = _send(stack, 'POST', '/v2/device_profiles', None,
                 [{'name': name, 'groups': [{'resources:FPGA': '1'}]}])
    assert made.status_code == 201, made.text
    made = _send(stack, 'POST', '/v2/accelerator_requests', None,
                 {'device_profile_name': name})
    assert made.status_code == 201, made.text
    (arq,) = made.json()['arqs']
    writes = _writes(stack, dep_uuid, arq['uuid'])
    before = _rows(stack)
    for what, method, path, version, body in writes:
        for named, text in UNSTORABLE.items():
            resp = _send(stack, method, path, version, body(text))
            assert resp.status_code == 400, (what, named, resp.text)
            said = json.loads(resp.json()['error_message'])['faultstring']
            assert said.startswith('Invalid input: field '), said
            assert said.endswith('holds %s, which cannot be stored'
                                 % named), said
        resp = _send(stack, method, path, version, body(TOO_LONG))
        assert resp.status_code == 400, (what, 'too long', resp.text[:300])
    assert _rows(stack) == before
    kept = []
    for what, method, path, version, body in writes:
        text = 'gpu-%s-%s' % (FOUR_BYTES, uuid.uuid4().hex[:8])
        resp = _send(stack, method, path, version, body(text))
        assert resp.status_code < 500, (what, resp.text)
        if resp.status_code == 201:
            kept.append((what, text))
    assert {'profile description', 'attribute value'} <= {
        what for what, _text in kept}, kept
    # NOTE(tests): read back from the database, not from the answers.
    v24 = {'OpenStack-API-Version': 'accelerator 2.4'}
    stored = json.dumps([_get(stack, path, **v24).json() for path in (
        '/v2/device_profiles', '/v2/attributes', '/v1/accelerators')],
        ensure_ascii=False)
    for what, text in kept:
        assert text in stored, (what, text)


def test_restarts_lose_nothing(stack, tmp_path):
    """Kill the agent and the conductor; the inventory catches up."""
    conductor, agent, _api = stack['procs']
    processes.wait_for(lambda: _devices(stack), 90, what='agent report')
    agent.stop(signal.SIGKILL)
    conductor.stop(signal.SIGKILL)

    # The host gains a device while the conductor is down; the agent
    # comes back first and must hold its report until the conductor does.
    conf = agent.proc.args[-1]
    with open(conf) as handle:
        text = handle.read()
    with open(conf, 'w') as handle:
        handle.write(text.replace('device_count = 2', 'device_count = 3'))
    os.makedirs(tmp_path / 'agent', exist_ok=True)
    os.makedirs(tmp_path / 'conductor', exist_ok=True)
    stack['procs'][1] = agent = processes.Process(
        'cyborg-agent', conf, tmp_path / 'agent')
    processes.wait_for(lambda: 'retrying in' in agent.log(), 60,
                       what='the agent noticing the conductor is down')
    stack['procs'][0] = processes.Process(
        'cyborg-conductor', conductor.proc.args[-1],
        tmp_path / 'conductor')

    def three():
        resp = _get(stack, '/v2/devices')
        found = [d for d in resp.json()['devices']
                 if d['hostname'] == stack['host']]
        return found if len(found) == 3 else None

    devices = processes.wait_for(three, 90, what='the third device')
    # Nothing twice: the first two kept their identity, one was added.
    assert len({d['uuid'] for d in devices}) == 3
    assert 'Reported' in agent.log()
