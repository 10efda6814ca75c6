"""The error envelope on every error, and the exception-to-status mapping."""

import json

import oslo_messaging as messaging
import pytest
import webob
import webob.exc

from cyborg import exception
from cyborg.api import errors
from cyborg.objects import device as device_obj
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault


@pytest.mark.parametrize('exc, status', [
    (exception.InvalidParameterValue(err='x'), 400),
    (exception.NotAuthorized(), 401),
    (exception.PolicyNotAuthorized(action='a'), 403),
    (exception.DeviceNotFound(uuid='u'), 404),
    (exception.InvalidMicroversion(version='9', min_version='2.0',
                                   max_version='2.3'), 406),
    (exception.DuplicateEntry(resource='r', columns='c', value='v'), 409),
    (exception.DatabaseUnavailable(reason='down'), 503),
    (exception.ObjectActionError(action='a', reason='r'), 500),
    (RuntimeError('boom'), 500),
])
def test_status_for(exc, status):
    assert errors.status_for(exc) == status


def test_unknown_route_is_404_envelope(api):
    response = api.get('/v2/no_such_thing', headers=ADMIN,
                       expect_errors=True)
    assert response.status_int == 404
    assert fault(response) == {'faultcode': 'Client', 'debuginfo': None,
                               'faultstring': 'The resource could not be '
                                              'found.'}


def test_unknown_route_for_a_browser_is_json_too(api):
    browser = 'text/html,application/xhtml+xml,*/*;q=0.8'
    response = api.get('/v2/no_such_thing', expect_errors=True,
                       headers=dict(ADMIN, Accept=browser))
    assert response.status_int == 404
    assert fault(response)['faultcode'] == 'Client'


def test_only_json_is_spoken(api):
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, Accept='application/xml'))
    assert response.status_int == 406
    assert 'application/json' in fault(response)['faultstring']


def test_method_not_allowed_is_405_envelope(api):
    response = api.delete('/v2/devices', headers=ADMIN, expect_errors=True)
    assert response.status_int == 405
    assert fault(response)['faultcode'] == 'Client'


def test_unexpected_error_is_500_without_details(api, make_device,
                                                 monkeypatch, caplog):
    make_device()

    def broken(cls, context, **kwargs):
        raise RuntimeError('secret internal detail')

    monkeypatch.setattr(device_obj.Device, 'list_view', classmethod(broken))
    response = api.get('/v2/devices', headers=ADMIN, expect_errors=True)
    assert response.status_int == 500
    body = fault(response)
    assert body == {'faultcode': 'Server', 'debuginfo': None,
                    'faultstring': errors.GENERIC_MESSAGE}
    assert 'Traceback' not in response.text
    assert 'secret' not in response.text
    # NOTE(tests): the operator finds the cause in the log.
    assert 'secret internal detail' in caplog.text


def test_503_keeps_its_message(api, monkeypatch):
    def down(cls, context, **kwargs):
        raise exception.DatabaseUnavailable(reason='no route to host')

    monkeypatch.setattr(device_obj.Device, 'list_view', classmethod(down))
    response = api.get('/v2/devices', headers=ADMIN, expect_errors=True)
    assert response.status_int == 503
    assert fault(response)['faultcode'] == 'Server'
    assert 'no route to host' in fault(response)['faultstring']


def test_conductor_timeout_is_503(api, monkeypatch):
    def silent(cls, context, **kwargs):
        raise messaging.MessagingTimeout('no reply on topic cyborg-cond')

    monkeypatch.setattr(device_obj.Device, 'list_view', classmethod(silent))
    response = api.get('/v2/devices', headers=dict(ADMIN, **WITH_CODES),
                       expect_errors=True)
    assert response.status_int == 503
    assert code(response) == 'cyborg.conductor.unavailable'
    assert 'topic' not in response.text


def _wrapped(app):
    return webob.Request.blank('/').get_response(
        errors.FaultMiddleware(app))


def test_middleware_wraps_plain_text_errors():
    response = _wrapped(webob.exc.HTTPRequestEntityTooLarge(
        explanation='Request is too large.'))
    assert response.status_int == 413
    message = fault(response)['faultstring']
    assert 'Request is too large.' in message


def test_middleware_wraps_keystone_json():
    body = {'error': {'code': 401, 'title': 'Unauthorized',
                      'message': 'The request requires authentication.'}}
    app = webob.Response(status=401, json_body=body)
    response = _wrapped(app)
    assert response.status_int == 401
    assert fault(response)['faultstring'] == (
        'The request requires authentication.')


def test_middleware_hides_5xx_bodies():
    app = webob.Response(status=500, content_type='text/plain',
                         body=b'Traceback (most recent call last): ...')
    response = _wrapped(app)
    assert response.status_int == 500
    assert 'Traceback' not in response.text
    assert fault(response)['faultstring'] == errors.GENERIC_MESSAGE


def test_middleware_turns_crashes_into_500():
    def crash(environ, start_response):
        raise ValueError('oops')

    response = _wrapped(crash)
    assert response.status_int == 500
    assert 'oops' not in response.text


def test_middleware_leaves_successes_and_envelopes_alone():
    ok = webob.Response(json_body={'a': 1})
    assert _wrapped(ok).json == {'a': 1}
    envelope = webob.Response(status=404, content_type='application/json',
                              body=errors.envelope(404, 'gone'))
    assert json.loads(_wrapped(envelope).json['error_message']) == {
        'faultcode': 'Client', 'faultstring': 'gone', 'debuginfo': None}
