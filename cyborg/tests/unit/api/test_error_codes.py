"""Error codes: one per exception class, all documented, shown from 2.12."""

import inspect
import json
import os
import re
import sys

import oslo_messaging as messaging
from oslo_messaging._drivers import common as rpc_common
import pytest
import webob
import webob.exc

from cyborg import exception
from cyborg import rpc
from cyborg.api import errors
from cyborg.objects import device as device_obj
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header

ERRORS_PAGE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                           os.pardir, os.pardir, 'api-ref', 'source',
                           'errors.rst')
PATTERN = re.compile(r'^cyborg(\.[a-z_]+)+$')
MISSING = '/v2/devices/%s' % ('0' * 8 + '-0000-4000-8000-' + '0' * 12)


def _classes():
    return [found for _name, found in inspect.getmembers(
        exception, inspect.isclass)
        if issubclass(found, exception.CyborgException)
        and found.__module__ == exception.__name__]


def _own_codes():
    """{class: code} of every class that states a code of its own."""
    return {found: vars(found)['code'] for found in _classes()
            if 'code' in vars(found)}


def _listed():
    with open(ERRORS_PAGE, encoding='utf-8') as page:
        return set(re.findall(r'^   \* - ``(cyborg[a-z_.]*)``$',
                              page.read(), re.MULTILINE))


def test_codes_follow_the_pattern_and_are_unique():
    codes = list(_own_codes().values())
    assert codes
    for found in codes:
        assert PATTERN.match(found), found
    assert len(codes) == len(set(codes)), sorted(
        found for found in codes if codes.count(found) > 1)


def test_every_error_a_client_meets_has_its_own_code():
    for found in _classes():
        if any(issubclass(found, family)
               for family, _status in errors.STATUS_BY_FAMILY):
            assert 'code' in vars(found), found.__name__
        else:
            # NOTE(tests): a 500 says nothing of its cause, its code neither.
            assert found.code == 'cyborg.undefined_code', found.__name__


def test_the_api_reference_lists_exactly_the_codes():
    codes = set(_own_codes().values())
    listed = _listed()
    assert codes - listed == set(), 'not in api-ref/source/errors.rst'
    assert listed - codes == set(), 'listed but no exception has it'


def test_every_bare_status_code_is_an_exception_code():
    codes = set(_own_codes().values())
    for status in (400, 401, 403, 404, 405, 406, 409, 413, 415, 500, 503):
        assert errors.code_for_status(status) in codes


def test_a_relayed_exception_keeps_its_code():
    try:
        raise exception.ARQBadState(uuid='u', state='Bound',
                                    target='Bound')
    except exception.ARQBadState:
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    relayed = rpc_common.deserialize_remote_exception(
        data, rpc.ALLOWED_EXMODS)
    assert isinstance(relayed, exception.ARQBadState)
    assert relayed.code == 'cyborg.arq.bad_state'


def test_a_relayed_exception_answers_its_code(api, monkeypatch):
    try:
        raise exception.DeviceNotFound(uuid='u')
    except exception.DeviceNotFound:
        data = rpc_common.serialize_remote_exception(sys.exc_info())

    def relayed(cls, context, **kwargs):
        raise rpc_common.deserialize_remote_exception(data,
                                                      rpc.ALLOWED_EXMODS)

    monkeypatch.setattr(device_obj.Device, 'list_view', classmethod(relayed))
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, **WITH_CODES))
    assert response.status_int == 404
    assert code(response) == 'cyborg.device.not_found'


@pytest.mark.parametrize('headers', [
    {}, version_header('accelerator 2.11'), version_header('accelerator 2.0'),
])
def test_earlier_versions_keep_the_body_exactly(api, headers):
    response = api.get(MISSING, headers=dict(ADMIN, **headers),
                       expect_errors=True)
    assert response.status_int == 404
    assert response.body == errors.envelope(
        404, 'Device %s could not be found.' % MISSING.rsplit('/', 1)[1])


@pytest.mark.parametrize('value', ['accelerator 2.12',
                                   'accelerator latest'])
def test_the_code_follows_the_fault_from_2_12(api, value):
    response = api.get(MISSING, expect_errors=True,
                       headers=dict(ADMIN, **version_header(value)))
    assert response.status_int == 404
    assert list(fault(response)) == ['faultcode', 'faultstring',
                                     'debuginfo', 'code']
    assert code(response) == 'cyborg.device.not_found'


def test_v1_never_shows_codes(api):
    response = api.get('/v1/no_such_thing', expect_errors=True,
                       headers=dict(ADMIN, **WITH_CODES))
    assert response.status_int == 405
    assert 'code' not in fault(response)


@pytest.mark.parametrize('method, path, headers, status, expected', [
    ('get', '/v2/no_such_thing', {}, 404, 'cyborg.route.not_found'),
    ('delete', '/v2/devices', {}, 405, 'cyborg.method.not_allowed'),
    ('get', '/v2/devices', {'Accept': 'application/xml'}, 406,
     'cyborg.media_type.not_acceptable'),
])
def test_bare_statuses_have_codes(api, method, path, headers, status,
                                  expected):
    response = getattr(api, method)(
        path, expect_errors=True, headers=dict(ADMIN, **WITH_CODES,
                                               **headers))
    assert response.status_int == status
    assert code(response) == expected


@pytest.mark.parametrize('value, expected', [
    ('accelerator 2.99', 'cyborg.microversion.unsupported'),
    ('accelerator 3.0', 'cyborg.microversion.unsupported'),
    ('accelerator two', 'cyborg.microversion.malformed'),
])
def test_a_refused_version_has_a_code(api, value, expected):
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, **version_header(value)))
    assert response.status_int == 406
    assert code(response) == expected


def test_a_refused_version_below_2_12_has_none(api):
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, **version_header(
                           'accelerator 1.5')))
    assert response.status_int == 406
    assert 'code' not in fault(response)


def test_a_schema_error_has_a_code(api):
    response = api.post_json('/v2/device_profiles', [{'groups': []}],
                             headers=dict(ADMIN, **WITH_CODES),
                             expect_errors=True)
    assert response.status_int == 400
    assert code(response) == 'cyborg.body.invalid'


def test_a_body_that_is_not_json_has_a_code(api):
    response = api.post('/v2/device_profiles', b'{', expect_errors=True,
                        headers=dict(ADMIN, **WITH_CODES,
                                     **{'Content-Type': 'application/json'}))
    assert response.status_int == 400
    assert code(response) == 'cyborg.body.malformed'


def test_policy_refusal_has_a_code(api):
    response = api.get('/v2/devices', expect_errors=True, headers=dict(
        WITH_CODES, **{'X-Roles': 'nobody', 'X-Project-Id': 'p',
                       'X-User-Id': 'u'}))
    assert response.status_int == 403
    assert code(response) == 'cyborg.policy.not_allowed'


def test_an_unreachable_conductor_has_a_code(api, monkeypatch):
    def silent(cls, context, **kwargs):
        raise messaging.MessagingTimeout('no reply')

    monkeypatch.setattr(device_obj.Device, 'list_view', classmethod(silent))
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, **WITH_CODES))
    assert response.status_int == 503
    assert code(response) == 'cyborg.conductor.unavailable'


def test_a_500_has_the_undefined_code(api, monkeypatch):
    def broken(cls, context, **kwargs):
        raise exception.ObjectActionError(action='a', reason='r')

    monkeypatch.setattr(device_obj.Device, 'list_view', classmethod(broken))
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, **WITH_CODES))
    assert response.status_int == 500
    assert code(response) == 'cyborg.undefined_code'


def _through_middleware(app, headers, path='/v2/devices'):
    request = webob.Request.blank(path, headers=headers)
    return request.get_response(errors.FaultMiddleware(app))


@pytest.mark.parametrize('headers, shown', [
    (WITH_CODES, True), ({}, False),
    (version_header('accelerator 2.11'), False),
])
def test_keystone_401_is_judged_by_the_version_asked(headers, shown):
    body = {'error': {'code': 401, 'title': 'Unauthorized',
                      'message': 'The request requires authentication.'}}
    response = _through_middleware(
        webob.Response(status=401, json_body=body), headers)
    found = json.loads(response.json['error_message'])
    assert found.get('code') == (
        'cyborg.authentication.required' if shown else None)


def test_the_size_limit_413_has_a_code():
    response = _through_middleware(
        webob.exc.HTTPRequestEntityTooLarge(), WITH_CODES)
    assert response.status_int == 413
    assert json.loads(response.json['error_message'])['code'] == (
        'cyborg.body.too_large')
