"""Property-based fuzzing of the whole API: no 5xx, every 4xx an envelope."""

import json

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from cyborg.tests import fake_services
from cyborg.tests.unit.api import fuzzing
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.fuzz_strategies import ACCELERATORS
from cyborg.tests.unit.api.fuzz_strategies import MISSING
from cyborg.tests.unit.api.fuzz_strategies import Request

ARQS = '/v2/accelerator_requests'


@pytest.fixture
def world(stack, api, override, ctx, db, make_device, make_deployable,
          monkeypatch, tmp_path):
    """Four agent-reported devices and one made here, profiles, ARQs in
    every state a client can meet, /v1 accelerators attached to an
    instance, to the host or to nothing, and a second driver on the
    agent."""
    override('device_count', 4, group='fake_driver')
    override('accelerators_per_device', 4, group='fake_driver')
    # NOTE(tests): an agent call that goes astray fails its example in
    # seconds rather than stalling the run for minutes.
    override('agent_rpc_timeout', 10, group='conductor')
    # NOTE(tests): drivers installed through /v2/drivers read an empty
    # sysfs, not this machine's devices.
    sysfs = tmp_path / 'sysfs'
    sysfs.mkdir()
    override('sysfs_root', str(sysfs), group='agent')
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
# NOTE(tests): past Python's limit on the digits int() converts (4300).
_DIGITS = '9' * 5000


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
    _case('past-int-digits', 'GET', '/v2/devices?limit=' + _DIGITS,
          **{'OpenStack-API-Version': 'accelerator 2.4'}),
    _case('past-int-digits', 'GET', '/v2/deployables?filters.field='
          'device_id&filters.value=' + _DIGITS),
    _case('past-int-digits', 'GET', '/v2/attributes?deployable_id=' +
          _DIGITS),
    # NOTE(tests): pecan passes the members of a JSON object body to plain
    # handlers as keyword arguments.
    _case('json-members-as-arguments', 'PATCH', ARQS, b'{"uuid": []}',
          **_JSON),
])
def test_5xx_the_fuzzing_found(api, case):
    check(case, case.send(api))


# NOTE(tests): /v1 routes build the conductor's client even to route; the
# others here get as far as the conductor.
@pytest.mark.parametrize('case', [
    _case('arq-create-not-an-object', 'POST', ARQS, b'null', **_JSON),
    _case('v1-show-without-uuid', 'GET', ACCELERATORS + '//', **ADMIN),
    _case('v1-show-without-uuid', 'GET', ACCELERATORS + '/%2F', **ADMIN),
    _case('if-match-past-int-digits', 'PUT',
          '%s/%s/num' % (ACCELERATORS, MISSING[0]), b'{"num": 2}',
          **dict(_JSON, **ADMIN, **{'If-Match': '"%s"' % _DIGITS})),
    _case('json-members-as-arguments', 'PUT',
          '%s/%s' % (ACCELERATORS, MISSING[0]),
          b'{"acc_spec": [], "num": 1}', **dict(_JSON, **ADMIN)),
    _case('json-members-as-arguments', 'DELETE', '/v2/drivers',
          b'{"host": [], "name": "x"}',
          **dict(_JSON, **ADMIN, **{'OpenStack-API-Version':
                                    'accelerator 2.5'})),
])
def test_5xx_the_fuzzing_found_past_the_conductor(stack, api, case):
    check(case, case.send(api))
