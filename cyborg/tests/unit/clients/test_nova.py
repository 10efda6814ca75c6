"""The Nova client's ownership question: which project owns a server."""

from keystoneauth1 import exceptions as ks_exc
import pytest

from cyborg import exception
from cyborg.clients import nova as nova_client
from cyborg.tests import deployments
from cyborg.tests import fake_services
from cyborg.tests import processes

INSTANCE = '5bb6ea9a-8a9f-4f8e-9a43-0b1a44c0b6c1'


@pytest.fixture
def nova(override):
    """A FakeNova, and [nova] pointing at it."""
    with deployments.FakeNova() as fake:
        fake_services.point('nova', fake.url, override)
        yield fake


class _Response:
    def __init__(self, status, body=None):
        self.status_code = status
        self._body = body

    def json(self):
        if self._body is None:
            raise ValueError('no JSON')
        return self._body


class _Adapter:
    """A keystoneauth adapter that answers every GET the same."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def get(self, path, **kwargs):
        self.calls.append((path, kwargs))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_owner_of_a_server_is_its_tenant_id(nova):
    nova.own(INSTANCE, 'p1')
    assert nova_client.NovaClient().server_project(INSTANCE) == 'p1'
    (shown,) = nova.shown
    assert shown['instance'] == INSTANCE
    # NOTE(tests): tenant_id is in the body of every microversion.
    assert shown['headers']['OpenStack-API-Version'] == 'compute 2.1'


def test_a_server_nova_does_not_have_is_none(nova):
    assert nova_client.NovaClient().server_project(INSTANCE) is None


def test_an_unreachable_nova_is_unavailable(override):
    fake_services.point('nova', 'http://127.0.0.1:%d/v2.1'
                        % processes.free_port(), override)
    with pytest.raises(exception.NovaUnavailable) as caught:
        nova_client.NovaClient().server_project(INSTANCE)
    assert 'ConnectFailure' in caught.value.message


@pytest.mark.parametrize('answer', [
    _Response(500, {'computeFault': {'code': 500}}),
    _Response(503),
    # NOTE(tests): Cyborg's own credentials refused: nobody can tell.
    _Response(401), _Response(403),
    _Response(200, {'server': {'id': INSTANCE}}),
    _Response(200, {'server': {'id': INSTANCE, 'tenant_id': ''}}),
    _Response(200),
    ks_exc.ConnectTimeout(),
    ks_exc.EndpointNotFound(),
])
def test_anything_else_is_unavailable(answer):
    adapter = _Adapter(answer)
    client = nova_client.NovaClient(adapter)
    with pytest.raises(exception.NovaUnavailable) as caught:
        client.server_project(INSTANCE)
    assert isinstance(caught.value, exception.ServiceUnavailable)
    ((path, kwargs),) = adapter.calls
    assert path == '/servers/%s' % INSTANCE
    assert kwargs['microversion'] == '2.1'
    assert kwargs['raise_exc'] is False


def test_enabled_with_an_adapter_or_a_configured_nova(override):
    assert not nova_client.NovaClient().enabled
    assert nova_client.NovaClient(_Adapter(None)).enabled
    fake_services.point('nova', 'http://127.0.0.1:1/v2.1', override)
    assert nova_client.NovaClient().enabled
