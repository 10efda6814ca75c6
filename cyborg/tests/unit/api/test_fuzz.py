"""Property-based fuzzing of the whole API: no 5xx, every 4xx an envelope."""

import json

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from cyborg.tests import fake_services
from cyborg.tests.unit.api import fuzzing
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.fuzz_strategies import Request

ARQS = '/v2/accelerator_requests'


@pytest.fixture
def world(stack, api, override, ctx, db, make_device, make_deployable,
          monkeypatch):
    """Two agent-reported devices and one made here, profiles, and ARQs
    in every state a client can meet."""
    override('device_count', 2, group='fake_driver')
    override('accelerators_per_device', 4, group='fake_driver')
    # NOTE(tests): an agent call that goes astray fails its example in
    # seconds rather than stalling the run for minutes.
    override('agent_rpc_timeout', 10, group='conductor')
    with fake_services.serving(override) as glance:
        yield from fuzzing.seeded(api, db, ctx, glance, make_device,
                           make_deployable, monkeypatch, stack)


# --- Checks ------------------------------------------------------------------

def check(request, response):
    """No 5xx, and every error in the envelope."""
    where = '%r answered %s %r' % (request, response.status,
                                   response.body[:300])
    assert response.status_int < 500, where
    if response.status_int >= 400:
        body = fault(response)
        assert body['faultcode'] == ('Client' if response.status_int < 500
                                     else 'Server'), where
        assert isinstance(body['faultstring'], str), where
        assert body['faultstring'], where


@settings(max_examples=1500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_no_request_gets_a_5xx(world, data):
    world.restore()
    for request in data.draw(world.requests):
        check(request, request.send(world.api))


# --- Regressions -------------------------------------------------------------

def _case(key, method, url, body=None, **headers):
    return pytest.param(Request(method, url, headers, body), id=key)


_JSON = {'Content-Type': 'application/json'}
_DEEP = b'[' * 50000 + b']' * 50000


# NOTE(tests): every 5xx the fuzzing found, fixed or not.
@pytest.mark.parametrize('case', [
    _case('deep-json', 'POST', '/v2/device_profiles', _DEEP, **_JSON),
    _case('deep-json', 'GET', '/v2/devices', _DEEP, **_JSON),
    _case('wsme-undecodable-json', 'GET', '/v2/devices', b'\xff', **_JSON),
    _case('wsme-bad-xml', 'GET', '/v2/devices', b'<a',
          **{'Content-Type': 'text/xml'}),
    _case('multipart-without-boundary', 'DELETE', '/v2/device_profiles',
          b'', **{'Content-Type': 'multipart/form-data'}),
    _case('multipart-without-boundary', 'PATCH', ARQS, b'',
          **{'Content-Type': 'multipart/form-data; boundary="a b "'}),
    _case('arq-create-not-an-object', 'POST', ARQS, b'[]', **_JSON),
    _case('patch-deployables-collection', 'PATCH', '/v2/deployables'),
    _case('not-decimal-digits', 'GET', '/v2/devices?limit=%C2%B2',
          **{'OpenStack-API-Version': 'accelerator 2.4'}),
    _case('not-decimal-digits', 'GET',
          '/v2/deployables?filters.field=limit&filters.value=%C2%B2'),
    _case('not-decimal-digits', 'GET', '/v2/attributes?deployable_id=%C2%B2'),
    _case('profile-amount-not-decimal', 'POST', '/v2/device_profiles',
          json.dumps([{'name': 'x', 'groups': [
              {'resources:FPGA': '²'}]}]).encode(), **_JSON),
    _case('past-sqlite-integers', 'GET', '/v2/deployables?filters.field='
          'device_id&filters.value=%d' % 2 ** 63),
    _case('past-sqlite-integers', 'GET', '/v2/deployables?filters.field='
          'limit&filters.value=%d' % 2 ** 63),
])
def test_5xx_the_fuzzing_found(api, case):
    check(case, case.send(api))


@pytest.mark.parametrize('case', [
    _case('arq-create-not-an-object', 'POST', ARQS, b'null', **_JSON),
])
def test_5xx_the_fuzzing_found_past_the_conductor(stack, api, case):
    check(case, case.send(api))
