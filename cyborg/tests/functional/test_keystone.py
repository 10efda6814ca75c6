"""Tokens of a real Keystone against the all-in-one on auth_strategy keystone.
"""

import pytest
import requests

from cyborg.tests import deployments
from cyborg.tests import faults

pytestmark = pytest.mark.functional


@pytest.fixture(scope='module')
def target(keystone, tmp_path_factory):
    with deployments.all_in_one_behind_keystone(
            tmp_path_factory.mktemp('aio-keystone'), keystone) as found:
        yield found


def _get(target, path, token=None, headers=None):
    headers = dict(headers or {})
    if token:
        headers['X-Auth-Token'] = token
    return requests.get(target.url + path, headers=headers, timeout=30)


def _fault(resp):
    """The WSME fault inside the error envelope (checks the envelope too)."""
    assert resp.headers['Content-Type'].startswith('application/json')
    return faults.fault_of(resp.json())


def test_a_manager_lists_devices(keystone, target):
    resp = _get(target, '/v2/devices', keystone.token('p1-manager'))
    assert resp.status_code == 200, resp.text
    assert [d['hostname'] for d in resp.json()['devices']] == [target.host]


def test_a_reader_may_not_list_devices(keystone, target):
    resp = _get(target, '/v2/devices', keystone.token('p1-reader'),
                headers=faults.WITH_CODES)
    assert resp.status_code == 403, resp.text
    assert _fault(resp)['code'] == 'cyborg.policy.not_allowed'


def test_a_system_scoped_admin_may_not_list_devices(keystone, target):
    resp = _get(target, '/v2/devices', keystone.system_admin_token())
    assert resp.status_code == 403, resp.text


@pytest.mark.parametrize('token', [None, 'no-such-token'],
                         ids=['no-token', 'invalid-token'])
def test_no_valid_token_is_401_in_the_envelope(keystone, target, token):
    resp = _get(target, '/v2/devices', token)
    assert resp.status_code == 401, resp.text
    assert _fault(resp)['faultcode'] == 'Client'
    assert 'code' not in _fault(resp)
    # NOTE(tests): refused before its version is settled, it is judged by
    # the version it asked for.
    resp = _get(target, '/v2/devices', token, headers=faults.WITH_CODES)
    assert resp.status_code == 401, resp.text
    assert _fault(resp)['code'] == 'cyborg.authentication.required'
    assert resp.headers['WWW-Authenticate'] == (
        'Keystone uri="%s"' % keystone.url)


@pytest.mark.parametrize('path, version', [('/', 'v2'), ('/v2', 'v2.0')])
def test_discovery_needs_no_token(target, path, version):
    resp = _get(target, path)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert (body['default_version'] if path == '/' else body)['id'] == version


def test_the_catalog_lists_cyborg(keystone, target):
    catalog = keystone.session('p1-member').auth.get_access(
        keystone.session('p1-member')).service_catalog
    assert catalog.url_for(service_type='accelerator', interface='public',
                           region_name='RegionOne') == target.url + '/v2'
