"""Outages of the database and the broker answer 503 with Retry-After."""

import uuid

from kombu import exceptions as kombu_exceptions
import microversion_parse
import oslo_messaging as messaging
import pytest

from cyborg import exception
from cyborg.api import errors
from cyborg.api import microversion
from cyborg.conductor import rpcapi
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import fault

# NOTE(tests): what Nova sends: a member's token and a service token.
NOVA = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-tenant',
        'X-User-Id': 'u-tenant', 'X-Service-Roles': 'service'}
FAILURES = {
    'database': (exception.DatabaseUnavailable(
        reason='the conductor cannot reach it; retry later'),
        'The database is unavailable', 'cyborg.database.unavailable'),
    'no-conductor': (messaging.MessagingTimeout('no reply on topic x'),
                     'the conductor did not answer in time',
                     'cyborg.conductor.unavailable'),
    'no-broker': (messaging.MessageDeliveryFailure('AMQP unreachable'),
                  'the conductor could not be reached',
                  'cyborg.conductor.unavailable'),
    # NOTE(tests): what oslo.messaging's RabbitMQ driver let out of a call
    # that needed a new pooled connection while the broker was down.
    'broker-refused': (kombu_exceptions.OperationalError(
        '[Errno 111] Connection refused'),
        'the conductor could not be reached', 'cyborg.conductor.unavailable'),
}
# (method, path, ConductorAPI method, first microversion, body)
ROUTES = (
    ('get', '/v2/accelerator_requests', 'list_arqs', '2.0', None),
    ('post', '/v2/accelerator_requests', 'create_arqs', '2.0',
     {'device_profile_name': 'p'}),
    ('patch', '/v2/accelerator_requests', 'bind_arqs', '2.0',
     {str(uuid.uuid4()): [
         {'op': 'add', 'path': '/hostname', 'value': 'h'},
         {'op': 'add', 'path': '/device_rp_uuid',
          'value': str(uuid.uuid4())},
         {'op': 'add', 'path': '/instance_uuid',
          'value': str(uuid.uuid4())}]}),
    ('get', '/v2/services', 'list_services', '2.5', None),
)


def _versions(since):
    return [v.version for v in microversion.VERSIONS
            if tuple(map(int, v.version.split('.'))) >=
            tuple(map(int, since.split('.')))]


@pytest.fixture
def failing(monkeypatch):
    """Make ConductorAPI.<name> raise; record the client's bounds."""
    made = []

    def init(self, topic=None, timeout=None, retry=None, reply_wait=None,
             monitor=0):
        made.append((timeout, retry, reply_wait, monitor))

    monkeypatch.setattr(rpcapi.ConductorAPI, '__init__', init)

    def fail(name, exc):
        def raiser(self, *args, **kwargs):
            raise exc
        monkeypatch.setattr(rpcapi.ConductorAPI, name, raiser)
    fail.made = made
    return fail


CASES = [(route, version, kind) for route in ROUTES
         for version in _versions(route[3]) for kind in FAILURES]


@pytest.mark.parametrize('route, version, kind', CASES,
                         ids=['%s %s %s %s' % (r[0], r[1], v, k)
                              for r, v, k in CASES])
def test_outage_is_503_with_retry_after(api, failing, override, route,
                                        version, kind):
    method, path, name, _since, body = route
    exc, words, expected = FAILURES[kind]
    override('rpc_timeout', 7, group='api')
    failing(name, exc)
    # NOTE(tests): listing services is the admin's.
    base = ADMIN if name == 'list_services' else NOVA
    headers = dict(base, **{'OpenStack-API-Version':
                            'accelerator %s' % version})
    if body is None:
        response = getattr(api, method)(path, headers=headers, status=503)
    else:
        response = getattr(api, method + '_json')(path, body,
                                                  headers=headers,
                                                  status=503)
    assert response.headers['Retry-After'] == str(errors.RETRY_AFTER)
    found = fault(response)
    assert found['faultcode'] == 'Server'
    assert words in found['faultstring']
    # NOTE(tests): the code from 2.12; earlier versions keep their body.
    shown = microversion_parse.parse_version_string(version) >= (2, 12)
    assert found.get('code') == (expected if shown else None)
    assert 'Traceback' not in response.text
    # the API's client is bounded by [api] rpc_timeout and a retry count,
    # and sends again the reads a conductor keeps silent on
    assert failing.made == [(7, rpcapi.API_RETRY, 7, 4)]


def test_object_indirection_uses_the_api_client(api, monkeypatch):
    from cyborg.conductor import indirection_client
    made = []
    monkeypatch.setattr(rpcapi.ConductorAPI, '__init__',
                        lambda self, **kw: made.append(kw))
    clients = [indirection_client.ConductorIndirectionAPI(rpcapi.for_api),
               indirection_client.ConductorIndirectionAPI()]
    assert all(client._conductor is not None for client in clients)
    assert made == [{'timeout': 10, 'retry': rpcapi.API_RETRY,
                     'reply_wait': 10, 'monitor': 4}, {}]


def test_other_errors_get_no_retry_after(api):
    response = api.get('/v2/no_such_thing', headers=ADMIN, status=404)
    assert 'Retry-After' not in response.headers
