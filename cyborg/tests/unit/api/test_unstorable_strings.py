"""A string no database can store (a lone surrogate, a NUL) is a 400 that
names its field, on every route, before anything reaches the database."""

import json

import pytest

from cyborg.tests.unit.api import test_api_ref
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

_JSON = {'Content-Type': 'application/json'}
# NOTE(tests): JSON's escape of a lone surrogate parses to one in Python;
# SQLite's driver then refuses it (DBInvalidUnicodeParameter, a 500), and
# PostgreSQL's refuses a NUL.
SURROGATE = '"\\ud800"'
NUL = '"\\u0000"'


def _writing_routes():
    routes = set()
    for text in test_api_ref._pages().values():
        for method, path in test_api_ref._METHOD.findall(text):
            if method in ('POST', 'PUT', 'PATCH', 'DELETE'):
                routes.add((method, test_api_ref._PARAM.sub(
                    '2b9e0f6c-4d1a-4c8e-9f3b-7a5d6e8c1f20', path)))
    return sorted(routes)


ROUTES = _writing_routes()


def test_the_reference_lists_the_writing_routes():
    assert ('POST', '/v2/accelerator_requests') in ROUTES
    assert ('POST', '/v2/attributes') in ROUTES
    assert len(ROUTES) >= 15


@pytest.mark.parametrize('method, path', ROUTES)
@pytest.mark.parametrize('text, named', [
    (SURROGATE, 'a lone surrogate (U+D800)'), (NUL, 'a NUL character')])
def test_every_writing_route_refuses_it_by_field(api, method, path, text,
                                                 named):
    body = '{"name": "ok", "groups": [{"resources:FPGA": %s}]}' % text
    resp = api.request(path, method=method, body=body.encode(),
                       headers=dict(ADMIN, **_JSON), expect_errors=True)
    assert resp.status_int == 400, (method, path, resp.body[:300])
    assert fault(resp)['faultstring'] == (
        'Invalid input: field groups[0].resources:FPGA holds %s, which '
        'cannot be stored' % named)


def test_a_key_or_a_bare_string_is_named_too(api):
    resp = api.request('/v2/device_profiles', method='POST',
                       body=b'[{"name\\ud800": 1}]',
                       headers=dict(ADMIN, **_JSON), expect_errors=True)
    assert resp.status_int == 400
    assert fault(resp)['faultstring'] == (
        'Invalid input: field [0].name\\ud800 (its name) holds a lone '
        'surrogate (U+D800), which cannot be stored')
    resp = api.request('/v2/attributes', method='POST', body=NUL.encode(),
                       headers=dict(ADMIN, **_JSON), expect_errors=True)
    assert resp.status_int == 400
    assert fault(resp)['faultstring'] == (
        'Invalid input: field body holds a NUL character, which cannot be '
        'stored')


def test_a_nul_in_a_query_parameter_is_named(api):
    resp = api.get('/v2/device_profiles?name=a%00b',
                   headers=dict(ADMIN, **WITH_CODES), expect_errors=True)
    assert resp.status_int == 400
    assert code(resp) == 'cyborg.text.unstorable'
    assert fault(resp)['faultstring'] == (
        'Invalid input: query parameter name holds a NUL character, which '
        'cannot be stored')


def test_a_profile_with_unusual_but_storable_text_is_made(api):
    text = 'gpu \u00e9\U0001f600 \u202e'
    body = [{'name': 'gpu', 'description': text,
             'groups': [{'resources:FPGA': '1'}]}]
    resp = api.post_json('/v2/device_profiles', body, headers=ADMIN)
    assert resp.status_int == 201
    assert json.loads(resp.body)['description'] == text
