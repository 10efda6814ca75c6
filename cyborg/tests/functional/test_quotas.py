"""Quotas from a real Keystone's unified limits, through oslo.limit.

The all-in-one runs behind the session's Keystone with ``[quota] driver =
unified_limits``; its conductor reads the limits as Keystone's ``cyborg``
user with a system-scoped reader role, as Nova's documentation asks of
its own service user. The registered limit and the project override are
created through Keystone's API, as an operator's ``openstack registered
limit create`` and ``openstack limit create`` would.
"""

import concurrent.futures
import uuid

import pytest
import requests

from cyborg.tests import deployments
from cyborg.tests import faults
from cyborg.tests import keystone as keystone_process
from cyborg.tests import processes

pytestmark = pytest.mark.functional

TIMEOUT = 60
V27 = {'OpenStack-API-Version': 'accelerator 2.7'}
ARQS = '/v2/accelerator_requests'
PROFILE = 'quota-one-fpga'
FPGA = 'class:FPGA'


def _system_api(keystone, method, path, body=None):
    resp = keystone.session(keystone_process.ADMIN, system=True).request(
        keystone.url + '/v3' + path, method, json=body, raise_exc=True)
    return resp.json() if resp.content else None


@pytest.fixture(scope='module')
def cloud(keystone, tmp_path_factory):
    """The all-in-one on unified limits; registered limit class:FPGA 2,
    p2 overridden to 3. Everything made in Keystone is removed after."""
    ids = keystone.ids
    _system_api(keystone, 'PUT', '/system/users/%s/roles/%s' % (
        ids['users']['cyborg'], ids['roles']['reader']))
    sections = {
        'quota': {'driver': 'unified_limits'},
        'oslo_limit': {
            'auth_url': keystone.url, 'auth_type': 'password',
            'username': 'cyborg', 'password': keystone_process.PASSWORD,
            'user_domain_id': keystone_process.DOMAIN,
            'system_scope': 'all',
            'endpoint_service_type': 'accelerator',
            'endpoint_region_name': keystone_process.REGION,
            'endpoint_interface': 'public'},
    }
    made = []
    with deployments.all_in_one_behind_keystone(
            tmp_path_factory.mktemp('quotas'), keystone,
            sections=sections) as deployment:
        (service,) = keystone.api('GET', '/services?type=accelerator')[
            'services']
        try:
            made.append(('registered_limits', _system_api(
                keystone, 'POST', '/registered_limits', {
                    'registered_limits': [{
                        'service_id': service['id'],
                        'region_id': keystone_process.REGION,
                        'resource_name': FPGA, 'default_limit': 2}]})[
                'registered_limits'][0]['id']))
            made.insert(0, ('limits', _system_api(
                keystone, 'POST', '/limits', {'limits': [{
                    'service_id': service['id'],
                    'project_id': ids['projects']['p2'],
                    'region_id': keystone_process.REGION,
                    'resource_name': FPGA, 'resource_limit': 3}]})[
                'limits'][0]['id']))
            _call(deployment, 'POST', '/v2/device_profiles', 201,
                  deployment.token(), json=[{
                      'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]}])
            yield deployment
        finally:
            for kind, made_id in made:
                _system_api(keystone, 'DELETE', '/%s/%s' % (kind, made_id))


def _call(deployment, method, path, status, token, headers=None, **kwargs):
    resp = requests.request(
        method, deployment.url + path, timeout=TIMEOUT,
        headers=dict(headers or {}, **{'X-Auth-Token': token}), **kwargs)
    assert resp.status_code == status, resp.text
    return resp


def _create(deployment, token, status=201):
    return _call(deployment, 'POST', ARQS, status, token,
                 json={'device_profile_name': PROFILE})


def _fault(resp):
    return faults.fault_of(resp.json())['faultstring']


def _limits(deployment, token):
    return _call(deployment, 'GET', '/v2/limits', 200, token, V27).json()


def _delete_all(deployment, token):
    for arq in _call(deployment, 'GET', ARQS, 200, token).json()['arqs']:
        _call(deployment, 'DELETE', '%s/%s' % (ARQS, arq['uuid']), 204,
              token)


def test_the_registered_limit_holds_a_project(keystone, cloud):
    token = keystone.token('p1-member')
    try:
        for _ in range(2):
            _create(cloud, token)
        refused = _create(cloud, token, status=403)
        assert _fault(refused) == (
            'Quota exceeded: class:FPGA has a limit of 2; project %s uses 2 '
            'and asks for 1 more.' % keystone.ids['projects']['p1'])
        assert len(_call(cloud, 'GET', ARQS, 200, token).json()['arqs']) == 2
        assert _limits(cloud, token) == {
            'project_id': keystone.ids['projects']['p1'],
            'limits': [{'resource': FPGA, 'resource_class': 'FPGA',
                        'limit': 2, 'usage': 2}]}
    finally:
        _delete_all(cloud, token)


def test_a_project_override_raises_its_limit(keystone, cloud):
    token = keystone.token('p2-member')
    try:
        for _ in range(3):
            _create(cloud, token)
        assert 'limit of 3; project %s uses 3' % keystone.ids['projects'][
            'p2'] in _fault(_create(cloud, token, status=403))
        assert _limits(cloud, token)['limits'] == [
            {'resource': FPGA, 'resource_class': 'FPGA', 'limit': 3,
             'usage': 3}]
        # an admin reads another project's; a member may not
        p2 = keystone.ids['projects']['p2']
        assert _call(cloud, 'GET', '/v2/limits?project_id=%s' % p2, 200,
                     keystone.admin_token(), V27).json()['limits'][0][
            'usage'] == 3
        _call(cloud, 'GET', '/v2/limits?project_id=%s' % p2, 403,
              keystone.token('p1-member'), V27)
    finally:
        _delete_all(cloud, token)


def test_concurrent_creates_never_overshoot(keystone, cloud):
    token = keystone.token('p2-member')
    attempts = 12
    try:
        with concurrent.futures.ThreadPoolExecutor(attempts) as pool:
            answers = list(pool.map(
                lambda _n: requests.post(
                    cloud.url + ARQS, timeout=TIMEOUT,
                    headers={'X-Auth-Token': token},
                    json={'device_profile_name': PROFILE}),
                range(attempts)))
        codes = sorted(resp.status_code for resp in answers)
        assert set(codes) <= {201, 403}, [r.text for r in answers]
        assert 1 <= codes.count(201) <= 3, codes
        for resp in answers:
            if resp.status_code == 403:
                assert 'class:FPGA has a limit of 3' in _fault(resp)
        held = _call(cloud, 'GET', ARQS, 200, token).json()['arqs']
        assert len(held) == codes.count(201) <= 3
        assert _limits(cloud, token)['limits'][0]['usage'] == len(held)
    finally:
        _delete_all(cloud, token)


def test_a_changed_limit_counts_at_once(keystone, cloud):
    """The conductor caches no limit beyond one request."""
    token = keystone.token('p1-member')
    (service,) = keystone.api('GET', '/services?type=accelerator')[
        'services']
    made = _system_api(keystone, 'POST', '/limits', {'limits': [{
        'service_id': service['id'],
        'project_id': keystone.ids['projects']['p1'],
        'region_id': keystone_process.REGION, 'resource_name': FPGA,
        'resource_limit': 0}]})['limits'][0]['id']
    try:
        assert 'limit of 0' in _fault(_create(cloud, token, status=403))
    finally:
        _system_api(keystone, 'DELETE', '/limits/%s' % made)
    try:
        _create(cloud, token)
    finally:
        _delete_all(cloud, token)


def test_an_unknown_profile_is_still_a_404(keystone, cloud):
    """The profile is looked up before any limit is read."""
    name = 'no-%s' % uuid.uuid4().hex
    resp = _call(cloud, 'POST', ARQS, 404, keystone.token('p1-member'),
                 headers=faults.WITH_CODES,
                 json={'device_profile_name': name})
    assert faults.code_of(resp.json()) == 'cyborg.device_profile.not_found'


def _ready_deployable(cloud, admin):
    """The fake device, made ready (a /v1 attach and a bind need it),
    and its deployable."""
    cloud.activate_devices()
    (deployable,) = _call(cloud, 'GET', '/v2/deployables', 200,
                          admin).json()['deployables']
    return deployable


def _resolved(cloud, token, instance):
    resp = requests.get(cloud.url + ARQS, timeout=TIMEOUT, params={
        'instance': instance, 'bind_state': 'resolved'},
        headers={'X-Auth-Token': token})
    return None if resp.status_code == 423 else resp.json()['arqs']


def _project_limit(keystone, project, units):
    (service,) = keystone.api('GET', '/services?type=accelerator')[
        'services']
    return _system_api(keystone, 'POST', '/limits', {'limits': [{
        'service_id': service['id'],
        'project_id': keystone.ids['projects'][project],
        'region_id': keystone_process.REGION, 'resource_name': FPGA,
        'resource_limit': units}]})['limits'][0]['id']


def test_a_v1_attach_is_checked_by_all_it_takes(keystone, cloud):
    """A /v1 attach takes its whole deployable (Placement reserves all of
    it): it once counted 1 unit and was never refused."""
    admin = keystone.admin_token()
    deployable = _ready_deployable(cloud, admin)
    units = deployable['num_accelerators']
    assert units > 2
    manager = keystone.token('p1-manager')
    one = '/v1/accelerators/%s' % deployable['uuid']
    p1 = keystone.ids['projects']['p1']
    refused = _call(cloud, 'PUT', one, 403, manager,
                    json={'instance_uuid': str(uuid.uuid4())})
    assert _fault(refused) == (
        'Quota exceeded: class:FPGA has a limit of 2; project %s uses 0 and '
        'asks for %d more.' % (p1, units))
    assert _call(cloud, 'GET', one, 200, admin).json()['attachments'] == []
    made = _project_limit(keystone, 'p1', units)
    try:
        _call(cloud, 'PUT', one, 200, manager,
              json={'instance_uuid': str(uuid.uuid4())})
        try:
            assert _limits(cloud, manager)['limits'][0]['usage'] == units
            _create(cloud, keystone.token('p1-member'), status=403)
        finally:
            _call(cloud, 'DELETE', one, 204, manager)
        assert _limits(cloud, manager)['limits'][0]['usage'] == 0
    finally:
        _system_api(keystone, 'DELETE', '/limits/%s' % made)


def test_a_bind_into_another_project_is_checked_against_it(keystone, cloud):
    """A bind's /project_id (2.1) moves the ARQ to that project; the move
    was never checked against its quota."""
    admin, nova = keystone.admin_token(), keystone.token('nova')
    deployable = _ready_deployable(cloud, admin)
    p1_member, p2_member = (keystone.token('p1-member'),
                            keystone.token('p2-member'))
    p1, p2 = keystone.ids['projects']['p1'], keystone.ids['projects']['p2']
    as_nova = {'X-Service-Token': nova,
               'OpenStack-API-Version': 'accelerator 2.1'}
    arq = {'uuid': 'none yet'}
    try:
        held = [_create(cloud, p2_member).json()['arqs'][0]['uuid']
                for _ in range(3)]
        (arq,) = _create(cloud, p1_member).json()['arqs']
        instance = str(uuid.uuid4())
        body = {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': cloud.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': deployable['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance},
            {'op': 'add', 'path': '/project_id', 'value': p2}]}
        refused = _call(cloud, 'PATCH', ARQS, 403, admin, as_nova, json=body)
        assert _fault(refused) == (
            'Quota exceeded: class:FPGA has a limit of 3; project %s uses 3 '
            'and asks for 1 more.' % p2)
        shown = _call(cloud, 'GET', '%s/%s' % (ARQS, arq['uuid']), 200,
                      admin).json()
        assert (shown['state'], shown['project_id']) == ('Initial', p1)
        # with room in p2, the same bind moves it there
        _call(cloud, 'DELETE', '%s/%s' % (ARQS, held[0]), 204, p2_member)
        _call(cloud, 'PATCH', ARQS, 202, admin, as_nova, json=body)
        (shown,) = processes.wait_for(
            lambda: _resolved(cloud, admin, instance), TIMEOUT,
            what='the moved ARQ to be bound')
        assert (shown['state'], shown['project_id']) == ('Bound', p2)
        assert _limits(cloud, p2_member)['limits'][0]['usage'] == 3
        assert _limits(cloud, p1_member)['limits'][0]['usage'] == 0
    finally:
        # NOTE(tests): a Bound ARQ is Nova's to delete.
        requests.delete(cloud.url + ARQS, timeout=TIMEOUT,
                        params={'arqs': arq['uuid']},
                        headers=dict(as_nova, **{'X-Auth-Token': admin}))
        _delete_all(cloud, p2_member)
        _delete_all(cloud, p1_member)
