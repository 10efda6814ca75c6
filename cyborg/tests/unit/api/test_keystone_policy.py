"""Keystone tokens and the in-code policies, end to end through the app."""

import datetime
import os
import pathlib
import subprocess
import sys
import uuid

from keystoneauth1 import fixture as ks_fixture
from keystonemiddleware import fixture as ksm_fixture
import pytest
import webtest

from cyborg import policies
from cyborg import policy
from cyborg import states
from cyborg.api import app as api_app
from cyborg.tests import arq_rows
from cyborg.tests import processes
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

KEYSTONE = 'https://keystone.example/identity'
ARQS = '/v2/accelerator_requests'
PROFILES = '/v2/device_profiles'
V23 = {'OpenStack-API-Version': 'accelerator 2.3'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
PROJECTS = ('p1', 'p2')
# Keystone puts implied roles in the token: admin > manager > member > reader.
PERSONAS = {
    'reader': ['reader'],
    'member': ['member', 'reader'],
    'manager': ['manager', 'member', 'reader'],
    'admin': ['admin', 'manager', 'member', 'reader'],
    'service': ['service'],
}
# Nova's own user, in the service project, sends this as X-Service-Token.
NOVA_TOKEN = 'nova-service'
NOT_SERVICE_TOKEN = 'p1-member'
ALLOWED = {
    'inventory': {'manager', 'admin'},
    'admin': {'admin'},
    'profile_read': {'reader', 'member', 'manager', 'admin'},
}
EVERYONE = [(persona, project) for project in PROJECTS
            for persona in PERSONAS]


def token_id(persona, project='p1'):
    return '%s-%s' % (project, persona)


def auth(persona, project='p1', service_token=None, **extra):
    headers = dict(extra, **{'X-Auth-Token': token_id(persona, project)})
    if service_token:
        headers['X-Service-Token'] = service_token
    return headers


def nova(project='p1'):
    """What Nova sends: the user's token and its own service token."""
    return auth('member', project, service_token=NOVA_TOKEN)


@pytest.fixture
def tokens():
    with ksm_fixture.AuthTokenFixture() as fixture:
        for persona, project in EVERYONE:
            fixture.add_token_data(
                token_id=token_id(persona, project),
                user_id='u-%s-%s' % (project, persona),
                project_id=project, role_list=PERSONAS[persona])
        fixture.add_token_data(token_id=NOVA_TOKEN, user_id='nova',
                               project_id='service', role_list=['service'])
        fixture.add_token_data(
            token_id='expired', user_id='u-gone', project_id='p1',
            role_list=PERSONAS['admin'],
            expires=datetime.datetime.now(datetime.timezone.utc) -
            datetime.timedelta(minutes=5))
        system = ks_fixture.V3Token(user_id='u-system')
        system.set_system_scope()
        system.add_role(name='admin')
        fixture.add_token(system, token_id='system-admin')
        yield fixture


@pytest.fixture
def app(db, override, tokens):
    """The real middleware stack on ``auth_strategy = keystone``."""
    override('auth_strategy', 'keystone', group='api')
    api_app.setup_app()  # registers [keystone_authtoken]
    # Without it a 401 would ask the (absent) identity server for its URL.
    override('www_authenticate_uri', KEYSTONE, group='keystone_authtoken')
    policy.reset()
    yield webtest.TestApp(api_app.setup_app())
    policy.reset()


def _forbidden(response, words):
    assert response.status_int == 403
    body = fault(response)
    assert body['faultcode'] == 'Client'
    assert words in body['faultstring']


# -- authentication ---------------------------------------------------------


@pytest.mark.parametrize('path, version', [('/', 'v2'), ('/v2', 'v2.0'),
                                           ('/v2/', 'v2.0')])
@pytest.mark.parametrize('headers', [{}, {'X-Auth-Token': 'no-such-token'}],
                         ids=['no-token', 'invalid-token'])
def test_discovery_needs_no_token(app, path, version, headers):
    response = app.get(path, headers=headers)
    assert response.status_int == 200
    body = response.json
    assert (body['default_version'] if path == '/' else body)['id'] == (
        version)


@pytest.mark.parametrize('path', ['/v2/devices', '/v2/deployables',
                                  PROFILES, ARQS])
def test_no_token_is_401_in_the_envelope(app, path):
    response = app.get(path, expect_errors=True)
    assert response.status_int == 401
    assert fault(response)['faultcode'] == 'Client'
    assert response.headers['WWW-Authenticate'] == (
        'Keystone uri="%s"' % KEYSTONE)


@pytest.mark.parametrize('headers', [
    {'X-Auth-Token': 'no-such-token'},
    {'X-Auth-Token': 'expired'},
    # A good user token does not save a bad service token.
    auth('member', service_token='no-such-token'),
    # keystonemiddleware refuses service tokens without the service role.
    auth('member', service_token=NOT_SERVICE_TOKEN),
], ids=['invalid', 'expired', 'invalid-service-token',
        'service-token-without-service-role'])
def test_bad_tokens_are_401(app, headers):
    response = app.get(PROFILES, headers=headers, expect_errors=True)
    assert response.status_int == 401
    assert fault(response)['faultcode'] == 'Client'


def test_identity_headers_from_the_client_are_ignored(app):
    forged = {'X-Roles': 'admin', 'X-Project-Id': 'p1',
              'X-Service-Roles': 'service', 'X-Identity-Status': 'Confirmed'}
    assert app.get('/v2/devices', headers=forged,
                   expect_errors=True).status_int == 401
    response = app.get('/v2/devices', headers=dict(forged, **auth('reader')),
                       expect_errors=True)
    _forbidden(response, 'cyborg:device:get_all')


def test_system_scoped_tokens_are_refused(app):
    # Every rule is scope_types=['project'], admin or not.
    response = app.get('/v2/devices', headers={'X-Auth-Token':
                                               'system-admin'},
                       expect_errors=True)
    _forbidden(response, 'cyborg:device:get_all')


# -- devices and deployables ------------------------------------------------


@pytest.fixture
def inventory(db, make_device, make_deployable):
    """One device with one deployable: uuids by kind."""
    device = make_device()
    deployable = make_deployable(device=device)
    return {'devices': device.uuid, 'deployables': deployable.uuid}


@pytest.mark.parametrize('persona, project', EVERYONE)
@pytest.mark.parametrize('kind, resource', [('devices', 'device'),
                                            ('deployables', 'deployable')])
def test_inventory_lists(app, inventory, persona, project, kind, resource):
    response = app.get('/v2/' + kind, headers=auth(persona, project),
                       expect_errors=True)
    if persona not in ALLOWED['inventory']:
        _forbidden(response, 'cyborg:%s:get_all' % resource)
        return
    assert response.status_int == 200
    assert [item['uuid'] for item in response.json[kind]] == [
        inventory[kind]]


@pytest.mark.parametrize('persona, project', EVERYONE)
@pytest.mark.parametrize('kind, resource', [('devices', 'device'),
                                            ('deployables', 'deployable')])
def test_inventory_shows(app, inventory, persona, project, kind, resource):
    response = app.get('/v2/%s/%s' % (kind, inventory[kind]),
                       headers=auth(persona, project), expect_errors=True)
    if persona not in ALLOWED['inventory']:
        _forbidden(response, 'cyborg:%s:get_one' % resource)
        return
    assert response.status_int == 200
    assert response.json['uuid'] == inventory[kind]


@pytest.fixture
def device(app, stack):
    """A device an agent reported (still inactive), over the conductor."""
    stack().report()
    (device,) = app.get('/v2/devices',
                        headers=auth('admin', **V24)).json['devices']
    assert device['status'] == 'inactive'
    return device['uuid']


def _device_status(app, uuid):
    return app.get('/v2/devices/' + uuid,
                   headers=auth('admin', **V24)).json['status']


@pytest.mark.parametrize('persona, project', EVERYONE)
@pytest.mark.parametrize('action, status', [('disable', 'maintaining'),
                                            ('enable', 'ready')])
def test_enable_and_disable_are_for_admins(app, device, persona, project,
                                           action, status):
    response = app.post('/v2/devices/%s/%s' % (device, action),
                        headers=auth(persona, project, **V23),
                        expect_errors=True)
    if persona not in ALLOWED['admin']:
        _forbidden(response, 'cyborg:device:%s' % action)
        assert _device_status(app, device) == 'inactive'
        return
    assert response.status_int == 204
    assert response.body == b''
    assert _device_status(app, device) == status


# -- device profiles --------------------------------------------------------


GROUPS = [{'resources:FPGA': '1'}]


@pytest.fixture
def profile(app):
    return app.post_json(PROFILES, [{'name': 'dp1', 'groups': GROUPS}],
                         headers=auth('admin'), status=201).json


def _profile_names(app):
    return [p['name'] for p in app.get(
        PROFILES, headers=auth('admin')).json['device_profiles']]


@pytest.mark.parametrize('persona, project', EVERYONE)
def test_profiles_list(app, profile, persona, project):
    response = app.get(PROFILES, headers=auth(persona, project),
                       expect_errors=True)
    if persona not in ALLOWED['profile_read']:
        _forbidden(response, 'cyborg:device_profile:get_all')
        return
    assert response.status_int == 200
    assert response.json['device_profiles'] == [profile]


@pytest.mark.parametrize('persona, project', EVERYONE)
def test_profiles_show(app, profile, persona, project):
    response = app.get(PROFILES + '/' + profile['uuid'],
                       headers=auth(persona, project), expect_errors=True)
    if persona not in ALLOWED['profile_read']:
        _forbidden(response, 'cyborg:device_profile:get_one')
        return
    assert response.status_int == 200
    assert response.json == {'device_profile': profile}


@pytest.mark.parametrize('persona, project', EVERYONE)
def test_profiles_create(app, persona, project):
    response = app.post_json(PROFILES, [{'name': 'new', 'groups': GROUPS}],
                             headers=auth(persona, project),
                             expect_errors=True)
    if persona not in ALLOWED['admin']:
        _forbidden(response, 'cyborg:device_profile:create')
        assert _profile_names(app) == []
        return
    assert response.status_int == 201
    assert response.json['name'] == 'new'
    assert _profile_names(app) == ['new']


@pytest.mark.parametrize('persona, project', EVERYONE)
def test_profiles_delete(app, profile, persona, project):
    response = app.delete(PROFILES + '/' + profile['uuid'],
                          headers=auth(persona, project), expect_errors=True)
    if persona not in ALLOWED['admin']:
        _forbidden(response, 'cyborg:device_profile:delete')
        assert _profile_names(app) == ['dp1']
        return
    assert response.status_int == 204
    assert _profile_names(app) == []


# -- accelerator requests ---------------------------------------------------


@pytest.fixture
def node(app, stack, override, db):
    """An agent with a fake FPGA of 16 handles, ready, a profile asking for
    two; the resource provider's uuid."""
    override('accelerators_per_device', 16, group='fake_driver')
    stack('node1').report()
    arq_rows.ready(db)
    (deployable,) = app.get('/v2/deployables',
                            headers=auth('admin')).json['deployables']
    app.post_json(PROFILES, [{'name': 'two', 'groups': [
        {'resources:FPGA': '2'}]}], headers=auth('admin'), status=201)
    return deployable['rp_uuid']


def _create(app, headers=None):
    return app.post_json(ARQS, {'device_profile_name': 'two'},
                         headers=headers or auth('member'),
                         status=201).json['arqs']


def _uuids(arqs):
    return sorted(arq['uuid'] for arq in arqs)


def _listed(app, headers):
    return _uuids(app.get(ARQS, headers=headers).json['arqs'])


def _bind_body(arqs, rp_uuid, instance):
    ops = [{'op': 'add', 'path': '/hostname', 'value': 'node1'},
           {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
           {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
    return {arq['uuid']: ops for arq in arqs}


def _unbind_body(arqs):
    return {arq['uuid']: [{'op': 'remove', 'path': path} for path in (
        '/hostname', '/device_rp_uuid', '/instance_uuid')] for arq in arqs}


def _bind(app, arqs, rp_uuid):
    """Nova binds the ARQs to a new instance; its uuid once resolved."""
    instance = str(uuid.uuid4())
    app.patch_json(ARQS, _bind_body(arqs, rp_uuid, instance),
                   headers=nova(), status=202)

    def resolved():
        response = app.get(ARQS, params={'instance': instance,
                                         'bind_state': 'resolved'},
                           headers=auth('member'), expect_errors=True)
        return response.json['arqs'] if response.status_int == 200 else None

    bound = processes.wait_for(resolved, 10, interval=0.05,
                               what='the ARQs to be bound')
    assert {arq['state'] for arq in bound} == {states.ARQ_BOUND}
    return instance


@pytest.mark.parametrize('persona, project', EVERYONE)
def test_arq_create(app, node, persona, project):
    response = app.post_json(ARQS, {'device_profile_name': 'two'},
                             headers=auth(persona, project),
                             expect_errors=True)
    # project_member_or_service: implied roles make managers and admins
    # members too; the service role alone suffices.
    if persona == 'reader':
        _forbidden(response, 'cyborg:arq:create')
        assert _listed(app, auth('admin')) == []
        return
    assert response.status_int == 201
    arqs = response.json['arqs']
    assert len(arqs) == 2
    # The owner is the token's project, never something the client says.
    assert {arq['project_id'] for arq in arqs} == {project}
    assert {arq['state'] for arq in arqs} == {states.ARQ_INITIAL}


def test_arqs_are_invisible_to_other_projects(app, node):
    mine = _create(app, auth('member', 'p1'))
    one = ARQS + '/' + mine[0]['uuid']
    for persona in ('reader', 'member', 'manager'):
        assert _listed(app, auth(persona, 'p2')) == []
        response = app.get(one, headers=auth(persona, 'p2', **WITH_CODES),
                           expect_errors=True)
        assert response.status_int == 404
        assert code(response) == 'cyborg.arq.not_found'
        assert _listed(app, auth(persona, 'p1')) == _uuids(mine)
        assert app.get(one, headers=auth(persona, 'p1')).json['uuid'] == (
            mine[0]['uuid'])
    # Another project cannot delete, nor (even through Nova) bind, them.
    app.delete(ARQS, params={'arqs': mine[0]['uuid']},
               headers=auth('member', 'p2'), status=404)
    app.patch_json(ARQS, _bind_body(mine, node, str(uuid.uuid4())),
                   headers=nova('p2'), status=404)
    assert {arq['state'] for arq in app.get(
        ARQS, headers=auth('member')).json['arqs']} == {states.ARQ_INITIAL}


@pytest.mark.parametrize('project', PROJECTS)
def test_admins_see_every_project(app, node, project):
    theirs = _create(app, auth('member', 'p1')) + _create(
        app, auth('member', 'p2'))
    assert _listed(app, auth('admin', project)) == _uuids(theirs)
    for arq in theirs:
        assert app.get(ARQS + '/' + arq['uuid'],
                       headers=auth('admin', project)).json[
                           'project_id'] == arq['project_id']


@pytest.mark.parametrize('persona, service_token, status', [
    ('member', None, 403),
    # A service role in the user's own token is not a service token.
    ('service', None, 403),
    ('admin', None, 403),
    ('member', NOVA_TOKEN, 202),
], ids=['member', 'service-user-token', 'admin', 'nova'])
def test_bind_needs_a_service_token(app, node, persona, service_token,
                                    status):
    arqs = _create(app)
    response = app.patch_json(
        ARQS, _bind_body(arqs, node, str(uuid.uuid4())),
        headers=auth(persona, service_token=service_token),
        expect_errors=True)
    assert response.status_int == status
    if status == 403:
        _forbidden(response, 'requires a service token')
        assert {arq['state'] for arq in app.get(
            ARQS, headers=auth('member')).json['arqs']} == {
                states.ARQ_INITIAL}
    else:
        assert response.body == b''


def test_cyborg_checks_the_service_tokens_roles_itself(app, node, override):
    # With keystonemiddleware accepting any valid token as a service token,
    # the cyborg:arq:service_token rule still keeps a tenant's from binding
    # (its default follows the deprecated [api] binding_service_roles).
    override('service_token_roles_required', False,
             group='keystone_authtoken')
    relaxed = webtest.TestApp(api_app.setup_app())
    arqs = _create(app)
    body = _bind_body(arqs, node, str(uuid.uuid4()))
    response = relaxed.patch_json(ARQS, body, headers=auth(
        'member', service_token=NOT_SERVICE_TOKEN), expect_errors=True)
    _forbidden(response, 'requires a service token')
    override('binding_service_roles', ['member'], group='api')
    policy.reset()
    relaxed.patch_json(ARQS, body, headers=auth(
        'member', service_token=NOT_SERVICE_TOKEN), status=202)


def test_unbind_needs_a_service_token(app, node):
    arqs = _create(app)
    _bind(app, arqs, node)
    response = app.patch_json(ARQS, _unbind_body(arqs),
                              headers=auth('member'), expect_errors=True)
    _forbidden(response, 'requires a service token')
    app.patch_json(ARQS, _unbind_body(arqs), headers=nova(), status=202)
    unbound = app.get(ARQS, headers=auth('member')).json['arqs']
    assert {arq['state'] for arq in unbound} == {states.ARQ_UNBOUND}
    assert {arq['instance_uuid'] for arq in unbound} == {None}


def test_deleting_bound_arqs_needs_a_service_token(app, node):
    unbound = _create(app)
    bound = _create(app)
    instance = _bind(app, bound, node)
    # A member may delete its project's unbound ARQs by itself.
    app.delete(ARQS, params={'arqs': unbound[0]['uuid']},
               headers=auth('member'), status=204)
    for params in ({'arqs': bound[0]['uuid']}, {'instance': instance}):
        response = app.delete(ARQS, params=params, headers=auth('member'),
                              expect_errors=True)
        _forbidden(response, 'service token')
    assert _listed(app, auth('member')) == _uuids([unbound[1]] + bound)
    app.delete(ARQS, params={'arqs': bound[0]['uuid']}, headers=nova(),
               status=204)
    app.delete(ARQS, params={'instance': instance}, headers=nova(),
               status=204)
    assert _listed(app, auth('member')) == [unbound[1]['uuid']]


# -- the policy sample ------------------------------------------------------


def test_policy_sample_generator_lists_every_rule(tmp_path):
    root = pathlib.Path(__file__).resolve().parents[4]
    config = root / 'etc' / 'cyborg' / 'cyborg-policy-generator.conf'
    assert config.is_file()
    output = tmp_path / 'policy.yaml.sample'
    script = os.path.join(os.path.dirname(sys.executable),
                          'oslopolicy-sample-generator')
    # The command line's --output-file beats the config file's, so the
    # tree's sample is left alone.
    result = subprocess.run(
        [script, '--config-file', str(config), '--output-file', str(output)],
        cwd=root, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    sample = output.read_text()
    for rule in policies.list_rules():
        assert '#"%s": "%s"\n' % (rule.name, rule.check_str) in sample
