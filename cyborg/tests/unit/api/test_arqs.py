"""/v2/accelerator_requests: create, list, bind, unbind, delete, as Nova does.
"""

import json
import uuid

from oslo_config import cfg
import pytest

from cyborg import context as cyborg_context
from cyborg import policy
from cyborg import states
from cyborg.conductor.bind import store as arq_store
from cyborg.db import api as dbapi
from cyborg.tests import arq_rows
from cyborg.tests import fake_services
from cyborg.tests import processes
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

CONF = cfg.CONF
URL = '/v2/accelerator_requests'
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-tenant',
          'X-User-Id': 'u-tenant'}
OTHER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-other',
         'X-User-Id': 'u-other'}
# What Nova sends: the user's token and a service token. (Keystone expands
# implied roles: a member is a reader too.)
NOVA = dict(MEMBER, **{'X-Service-Roles': 'service'})


@pytest.fixture
def node(stack, api, override, db):
    """An agent with one fake FPGA (16 handles), ready, and a profile
    using it."""
    override('accelerators_per_device', 16, group='fake_driver')
    agent = stack('node1')
    agent.report()
    arq_rows.ready(db)
    (deployable,) = dbapi.deployables.list(cyborg_context.get_admin_context())
    api.post_json('/v2/device_profiles', [
        {'name': 'two', 'groups': [{'resources:FPGA': '2'}]},
    ], headers=ADMIN)
    api.post_json('/v2/device_profiles', [
        {'name': 'split', 'groups': [{'resources:FPGA': '2'},
                                     {'resources:FPGA': '1'}]},
    ], headers=ADMIN)
    return deployable.rp_uuid


def _create(api, profile='two', headers=MEMBER):
    return api.post_json(URL, {'device_profile_name': profile},
                         headers=headers, status=201).json['arqs']


def _bind_ops(rp_uuid, instance, host='node1'):
    return [{'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]


def _wait_resolved(api, instance, headers=MEMBER):
    def resolved():
        resp = api.get(URL + '?instance=%s&bind_state=resolved' % instance,
                       headers=headers, expect_errors=True)
        return resp.json['arqs'] if resp.status_int == 200 else None
    return processes.wait_for(resolved, 10, interval=0.05,
                              what='the ARQs to be resolved')


def test_create_makes_one_arq_per_unit_per_group(api, node):
    arqs = _create(api, 'split')
    assert [a['device_profile_group_id'] for a in arqs] == [0, 0, 1]
    for arq in arqs:
        assert arq['state'] == states.ARQ_INITIAL
        assert arq['project_id'] == 'p-tenant'
        assert arq['device_profile_name'] == 'split'
        assert arq['attach_handle_type'] == ''
        assert arq['attach_handle_info'] == {}
        assert arq['hostname'] is None
    assert list(arqs[0]) == [
        'uuid', 'state', 'device_profile_name', 'device_profile_group_id',
        'hostname', 'device_rp_uuid', 'instance_uuid', 'project_id',
        'attach_handle_type', 'attach_handle_uuid', 'attach_handle_info',
        'created_at', 'updated_at', 'links']


@pytest.mark.parametrize('body, status, expected', [
    ({'device_profile_name': 'missing'}, 404,
     'cyborg.device_profile.not_found'),
    ({}, 400, 'cyborg.body.invalid'),
    ({'device_profile_name': 'two', 'extra': 1}, 400, 'cyborg.body.invalid'),
])
def test_create_refuses_bad_requests(api, node, body, status, expected):
    resp = api.post_json(URL, body, headers=dict(MEMBER, **WITH_CODES),
                         status=status)
    assert code(resp) == expected


def test_arqs_are_scoped_to_their_project(api, node):
    mine = _create(api)
    assert len(api.get(URL, headers=MEMBER).json['arqs']) == 2
    assert api.get(URL, headers=OTHER).json['arqs'] == []
    api.get(URL + '/' + mine[0]['uuid'], headers=OTHER, status=404)
    assert api.get(URL + '/' + mine[0]['uuid'],
                   headers=MEMBER).json['uuid'] == mine[0]['uuid']
    assert len(api.get(URL, headers=ADMIN).json['arqs']) == 2
    api.delete(URL + '?arqs=' + mine[0]['uuid'], headers=OTHER, status=404)


def test_bind_resolves_with_distinct_handles_then_unbind(api, node):
    arqs = _create(api)
    instance = str(uuid.uuid4())
    api.patch_json(URL, {a['uuid']: _bind_ops(node, instance)
                         for a in arqs}, headers=NOVA, status=202)
    bound = _wait_resolved(api, instance)
    assert {a['state'] for a in bound} == {states.ARQ_BOUND}
    assert {a['attach_handle_type'] for a in bound} == {'TEST_PCI'}
    infos = [json.dumps(a['attach_handle_info'], sort_keys=True)
             for a in bound]
    assert len(set(infos)) == 2
    assert set(bound[0]['attach_handle_info']) == {'domain', 'bus',
                                                   'device', 'function'}
    assert {a['device_rp_uuid'] for a in bound} == {node}
    assert {a['hostname'] for a in bound} == {'node1'}

    api.patch_json(URL, {a['uuid']: [
        {'op': 'remove', 'path': p} for p in
        ('/hostname', '/device_rp_uuid', '/instance_uuid')] for a in arqs},
        headers=NOVA, status=202)
    unbound = api.get(URL, headers=MEMBER).json['arqs']
    assert {a['state'] for a in unbound} == {states.ARQ_UNBOUND}
    assert {a['instance_uuid'] for a in unbound} == {None}
    handles = dbapi.attach_handles.list(cyborg_context.get_admin_context())
    assert not any(h.in_use for h in handles)


def test_bind_needs_a_service_token(api, node, override):
    arqs = _create(api)
    body = {a['uuid']: _bind_ops(node, str(uuid.uuid4())) for a in arqs}
    resp = api.patch_json(URL, body, headers=dict(MEMBER, **WITH_CODES),
                          status=403)
    assert code(resp) == 'cyborg.service_token.required'
    # upstream's wording, which tempest matches
    assert 'requires a service token' in fault(resp)['faultstring']
    # the deprecated option still shapes the rule's default
    override('require_service_token', False, group='api')
    policy.reset()
    api.patch_json(URL, body, headers=MEMBER, status=202)


def test_service_token_is_a_policy_rule(api, node, override, tmp_path):
    arqs = _create(api)
    body = {a['uuid']: _bind_ops(node, str(uuid.uuid4())) for a in arqs}
    path = tmp_path / 'policy.yaml'
    path.write_text('"cyborg:arq:service_token": "role:member"\n')
    override('policy_file', str(path), group='oslo_policy')
    policy.reset()
    api.patch_json(URL, body, headers=MEMBER, status=202)


def test_unresolved_binds_answer_423(api, node, ctx):
    (first, _second) = _create(api)
    instance = str(uuid.uuid4())
    dbapi.accelerator_requests.update(ctx, first['uuid'], {
        'state': states.ARQ_BIND_STARTED, 'instance_uuid': instance})
    resp = api.get(URL + '?instance=%s&bind_state=resolved' % instance,
                   headers=dict(MEMBER, **WITH_CODES), status=423)
    assert code(resp) == 'cyborg.arq.unresolved'
    assert first['uuid'] in fault(resp)['faultstring']
    listed = api.get(URL + '?instance=%s' % instance, headers=MEMBER)
    assert [a['uuid'] for a in listed.json['arqs']] == [first['uuid']]


def test_restarted_conductor_finishes_binds(api, node, ctx):
    from cyborg.conductor import manager

    (arq, _other) = _create(api)
    instance = str(uuid.uuid4())
    started, failed = arq_store.start_bind(ctx, {arq['uuid']: {
        'hostname': 'node1', 'device_rp_uuid': node,
        'instance_uuid': instance}}, owner='ctl-gone')
    assert (started, failed) == ([arq['uuid']], [])
    # The conductor that started it died before finishing it.
    manager.ConductorManager('ctl-2').init_host()
    (bound,) = _wait_resolved(api, instance)
    assert bound['state'] == states.ARQ_BOUND


def test_a_provider_out_of_handles_fails_the_bind(api, node, ctx):
    api.post_json('/v2/device_profiles', [
        {'name': 'many', 'groups': [{'resources:FPGA': '20'}]}],
        headers=ADMIN)
    arqs = _create(api, 'many')
    instance = str(uuid.uuid4())
    started, failed = arq_store.start_bind(ctx, {a['uuid']: {
        'hostname': 'node1', 'device_rp_uuid': node,
        'instance_uuid': instance} for a in arqs})
    # NOTE(tests): concurrent binds are proven on MariaDB and PostgreSQL
    # in the functional tests; SQLite serialises its writers anyway.
    assert (len(started), len(failed)) == (16, 4)
    rows = dbapi.accelerator_requests.list(ctx)
    handles = [r.attach_handle_id for r in rows
               if r.state == states.ARQ_BIND_STARTED]
    assert len(handles) == len(set(handles)) == 16
    assert {r.state for r in rows if r.uuid in failed} == {
        states.ARQ_BIND_FAILED}


@pytest.mark.parametrize('ops, words', [
    ([{'op': 'replace', 'path': '/hostname', 'value': 'x'}], 'is not one of'),
    ([{'op': 'add', 'path': '/state', 'value': 'Bound'}], 'is not one of'),
    ([{'op': 'add', 'path': '/hostname', 'value': 'x'}], 'add needs'),
    ([{'op': 'add', 'path': '/hostname'}] * 3, 'given twice'),
    ('not a list', "is not of type 'array'"),
    ([], 'should be non-empty'),
])
def test_bad_patches_are_400(api, node, ops, words):
    (arq, _other) = _create(api)
    resp = api.patch_json(URL, {arq['uuid']: ops}, headers=NOVA,
                          status=400)
    assert words in fault(resp)['faultstring']


def test_patch_refuses_mixed_ops_bad_uuids_and_unknown_arqs(api, node):
    first, second = _create(api)
    instance = str(uuid.uuid4())
    mixed = {first['uuid']: _bind_ops(node, instance),
             second['uuid']: [{'op': 'remove', 'path': p} for p in (
                 '/hostname', '/device_rp_uuid', '/instance_uuid')]}
    api.patch_json(URL, mixed, headers=NOVA, status=400)
    api.patch_json(URL, {'nope': _bind_ops(node, instance)}, headers=NOVA,
                   status=400)
    api.patch_json(URL, {str(uuid.uuid4()): _bind_ops(node, instance)},
                   headers=NOVA, status=404)
    api.patch_json(URL, {first['uuid']: _bind_ops(str(uuid.uuid4()),
                                                  instance)},
                   headers=NOVA, status=400)
    assert {a['state'] for a in api.get(URL, headers=MEMBER).json[
        'arqs']} == {states.ARQ_INITIAL}


def test_delete_by_uuids_and_by_instance(api, node):
    first, second = _create(api)
    api.delete(URL + '?arqs=%s' % first['uuid'], headers=MEMBER, status=204)
    instance = str(uuid.uuid4())
    api.patch_json(URL, {second['uuid']: _bind_ops(node, instance)},
                   headers=NOVA, status=202)
    _wait_resolved(api, instance)
    # Bound ones need Nova's service token.
    api.delete(URL + '?arqs=%s' % second['uuid'], headers=MEMBER,
               status=403)
    api.delete(URL + '?instance=%s' % instance, headers=MEMBER, status=403)
    api.delete(URL + '?instance=%s' % instance, headers=NOVA, status=204)
    assert api.get(URL, headers=MEMBER).json['arqs'] == []
    handles = dbapi.attach_handles.list(cyborg_context.get_admin_context())
    assert not any(h.in_use for h in handles)


@pytest.mark.parametrize('query', ['', '?arqs=a&instance=b', '?arqs=nope',
                                   '?instance=nope', '?other=1'])
def test_bad_deletes_are_400(api, node, query):
    api.delete(URL + query, headers=NOVA, status=400)


def test_resolved_without_instance_lists_the_resolved(api, node, ctx):
    (first, second) = _create(api)
    other = _create(api, headers=OTHER)
    for arq, state in ((first, states.ARQ_BOUND),
                       (other[0], states.ARQ_BIND_FAILED)):
        dbapi.accelerator_requests.update(ctx, arq['uuid'], {
            'state': state, 'instance_uuid': str(uuid.uuid4())})
    listed = api.get(URL + '?bind_state=resolved', headers=MEMBER).json
    assert [a['uuid'] for a in listed['arqs']] == [first['uuid']]
    everyone = api.get(URL + '?bind_state=resolved', headers=ADMIN).json
    assert sorted(a['uuid'] for a in everyone['arqs']) == sorted(
        [first['uuid'], other[0]['uuid']])
    assert second['uuid'] not in [a['uuid'] for a in everyone['arqs']]


def test_bad_list_queries_are_400(api, node):
    api.get(URL + '?instance=%s&bind_state=bound' % uuid.uuid4(),
            headers=MEMBER, status=400)
    api.get(URL + '?instance=nope', headers=MEMBER, status=400)


@pytest.mark.parametrize('name', ['', 'fake_dp', '!@#$%^&*()=-[]'])
def test_create_from_a_profile_that_does_not_exist_is_404(api, node, name):
    # as upstream answers it, and tempest expects
    resp = api.post_json(URL, {'device_profile_name': name},
                         headers=dict(MEMBER, **WITH_CODES), status=404)
    assert code(resp) == 'cyborg.device_profile.not_found'
    assert api.get(URL, headers=MEMBER).json['arqs'] == []


def test_readers_cannot_create(api, node):
    api.post_json(URL, {'device_profile_name': 'two'}, headers=READER,
                  status=403)


class _FakeNova:
    """Nova's external-events endpoint (Nova cannot run here)."""

    def __init__(self):
        self.events = []

    def __call__(self, environ, start_response):
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = json.loads(environ['wsgi.input'].read(length))
        self.events.append((environ['PATH_INFO'],
                            environ.get('HTTP_OPENSTACK_API_VERSION'),
                            body['events']))
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]


def test_nova_is_told_when_arqs_are_bound(api, node, override):
    nova = _FakeNova()
    with fake_services.serving_app(nova, 'nova', override):
        arqs = _create(api)
        instance = str(uuid.uuid4())
        api.patch_json(URL, {a['uuid']: _bind_ops(node, instance)
                             for a in arqs}, headers=NOVA, status=202)
        _wait_resolved(api, instance)
        processes.wait_for(lambda: nova.events, 10, what='the event')
    ((path, version, events),) = nova.events
    assert path.endswith('/os-server-external-events')
    assert version == 'compute 2.82'
    assert sorted(e['tag'] for e in events) == sorted(a['uuid']
                                                      for a in arqs)
    assert {(e['name'], e['server_uuid'], e['status']) for e in events} == {
        ('accelerator-request-bound', instance, 'completed')}


def test_project_id_is_set_from_2_1_by_admins_only(api, node):
    (arq, _other) = _create(api)
    instance = str(uuid.uuid4())
    ops = _bind_ops(node, instance) + [
        {'op': 'add', 'path': '/project_id', 'value': 'p-other'}]
    v21 = {'OpenStack-API-Version': 'accelerator 2.1'}
    # before 2.1 the path does not exist: 406, as upstream
    resp = api.patch_json(URL, {arq['uuid']: ops}, headers=NOVA,
                          status=406)
    assert 'needs microversion 2.1' in fault(resp)['faultstring']
    # a member, even with Nova's service token, may not move its ARQ into
    # another project
    resp = api.patch_json(URL, {arq['uuid']: ops},
                          headers=dict(NOVA, **WITH_CODES), status=403)
    assert code(resp) == 'cyborg.policy.not_allowed'
    assert 'cyborg:arq:set_project' in fault(resp)['faultstring']
    # (Keystone puts the roles admin implies in the token)
    admin = dict(ADMIN, **{'X-Service-Roles': 'service',
                           'X-Roles': 'admin,manager,member,reader'}, **v21)
    api.patch_json(URL, {arq['uuid']: ops}, headers=admin, status=202)
    (bound,) = _wait_resolved(api, instance, headers=ADMIN)
    assert bound['project_id'] == 'p-other'


def test_a_used_profile_is_not_deleted_nor_its_neighbours(api, node):
    _create(api, 'two')
    api.delete('/v2/device_profiles?value=split,two', headers=ADMIN,
               status=409)
    names = [p['name'] for p in api.get('/v2/device_profiles',
                                        headers=ADMIN).json[
                                            'device_profiles']]
    assert names == ['two', 'split']


def test_bind_answers_202_with_no_body(api, node):
    (arq, _other) = _create(api)
    resp = api.patch_json(URL, {arq['uuid']: _bind_ops(
        node, str(uuid.uuid4()))}, headers=NOVA, status=202)
    assert resp.body == b''


def test_patch_on_the_arq_path_as_openstacksdk_sends_it(api, node):
    first, second = _create(api)
    instance = str(uuid.uuid4())
    api.patch_json(URL + '/' + second['uuid'], {
        first['uuid']: _bind_ops(node, instance)}, headers=NOVA, status=400)
    api.patch_json(URL + '/' + first['uuid'], {
        first['uuid']: _bind_ops(node, instance)}, headers=NOVA, status=202)
    assert [a['uuid'] for a in _wait_resolved(api, instance)] == [
        first['uuid']]



V24 = {'OpenStack-API-Version': 'accelerator 2.4'}


def test_arq_lists_page_from_2_4(api, node):
    mine = _create(api, 'split') + _create(api, 'two')
    seen, url = [], URL + '?limit=2&sort_key=created_at'
    while url:
        body = api.get(url, headers=dict(MEMBER, **V24)).json
        assert len(body['arqs']) <= 2
        seen += [a['uuid'] for a in body['arqs']]
        url = body.get('next')
        if url:
            url = url[url.index('/v2/'):]
    assert seen == [a['uuid'] for a in mine]
    api.get(URL + '?limit=2', headers=MEMBER, status=400)
    assert api.get(URL + '?limit=2',
                   headers=dict(OTHER, **V24)).json['arqs'] == []
    # Another project's ARQ is no marker.
    api.get(URL + '?marker=%s' % mine[0]['uuid'],
            headers=dict(OTHER, **V24), status=400)


def test_resolved_check_covers_every_page(api, node, ctx):
    arqs = _create(api)
    instance = str(uuid.uuid4())
    api.patch_json(URL, {a['uuid']: _bind_ops(node, instance)
                         for a in arqs}, headers=NOVA, status=202)
    _wait_resolved(api, instance)
    dbapi.accelerator_requests.update(ctx, arqs[1]['uuid'], {
        'state': states.ARQ_BIND_STARTED})
    # NOTE(tests): the first page holds only the resolved ARQ; the answer
    # must still wait for the other one.
    resp = api.get(URL + '?instance=%s&bind_state=resolved&limit=1'
                   % instance, headers=dict(MEMBER, **WITH_CODES), status=423)
    assert code(resp) == 'cyborg.arq.unresolved'
    assert arqs[1]['uuid'] in fault(resp)['faultstring']


def test_a_retried_bind_is_idempotent(api, node):
    """The same PATCH again (the first got a 503 but was processed later)
    is accepted; another binding of a bound ARQ is still a conflict."""
    arqs = _create(api)
    instance = str(uuid.uuid4())
    body = {arq['uuid']: _bind_ops(node, instance) for arq in arqs}
    api.patch_json(URL, body, headers=NOVA, status=202)
    api.patch_json(URL, body, headers=NOVA, status=202)
    bound = _wait_resolved(api, instance)
    assert {a['state'] for a in bound} == {states.ARQ_BOUND}
    api.patch_json(URL, body, headers=NOVA, status=202)
    assert {a['state'] for a in _wait_resolved(api, instance)} == {
        states.ARQ_BOUND}
    other = {arq['uuid']: _bind_ops(node, instance, host='node2')
             for arq in arqs}
    api.patch_json(URL, other, headers=NOVA, status=409)
