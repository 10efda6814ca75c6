"""The conductor and agent services over oslo.messaging's fake transport."""

import time

import pytest

from cyborg import exception
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import indirection_client
from cyborg.objects import deployable
from cyborg.objects import device
from cyborg.objects import service as service_obj


@pytest.fixture
def services(stack):
    """A conductor and an agent whose periodic report runs at start."""
    return stack(periodic=True)


def _wait(predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_agent_report_reaches_the_database(services, ctx):
    assert _wait(lambda: device.Device.list(ctx))
    (dev,) = device.Device.list(ctx)
    assert dev.hostname == 'node1' and dev.status == 'inactive'
    (dep,) = deployable.Deployable.list(ctx)
    assert dep.name == 'node1_FakeDevice'
    assert _wait(lambda: service_obj.Service.get(ctx, 'node1',
                                                 'cyborg-agent'))
    assert service_obj.Service.get(ctx, 'ctl', 'cyborg-conductor').is_up


def test_conductor_asks_agent_to_discover(services, ctx):
    result = agent_rpcapi.AgentAPI().discover(ctx, 'node1')
    assert len(result['devices']) == 1


def test_indirection_round_trip(services, ctx):
    assert _wait(lambda: device.Device.list(ctx))
    api = indirection_client.ConductorIndirectionAPI()
    versions = {'Device': device.Device.VERSION}
    listed = api.object_class_action_versions(
        ctx, 'Device', 'list', versions, (), {'filters': {'hostname':
                                                          'node1'}})
    assert [d.hostname for d in listed] == ['node1']
    got = api.object_class_action_versions(ctx, 'Device', 'get', versions,
                                           (listed[0].uuid,), {})
    got.status = 'ready'
    updates, result = api.object_action(ctx, got, 'save', (), {})
    assert result is None and updates['updated_at'] is not None
    assert 'status' not in updates['obj_what_changed']
    assert device.Device.get(ctx, got.uuid).status == 'ready'
    with pytest.raises(exception.DeviceNotFound):
        api.object_class_action_versions(
            ctx, 'Device', 'get', versions,
            ('00000000-0000-0000-0000-000000000000',), {})


def test_report_for_another_host_is_refused(services, ctx):
    from cyborg.conductor import rpcapi
    with pytest.raises(exception.Invalid):
        rpcapi.ConductorAPI().report_data(
            ctx, 'node1', {'host': 'node2', 'devices': []})
