"""Device lifecycle: activation through the agent, health, recovery."""

import datetime

import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import lifecycle
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import models
from cyborg.objects import device as device_obj


@pytest.fixture
def agent(stack):
    agent = stack()
    agent.report()
    return agent


def _only_device(ctx):
    (device,) = device_obj.Device.list(ctx)
    return device


def test_activate_runs_install_and_makes_ready(agent, ctx):
    installed = []
    fake = agent.tracker.drivers['fake_driver']
    fake.install = installed.append
    device = _only_device(ctx)
    assert device.status == states.DEVICE_INACTIVE
    result = conductor_rpcapi.ConductorAPI().activate_device(ctx, device.uuid)
    assert result.status == states.DEVICE_READY
    assert [d.controlpath.cpid_info['bus'] for d in installed] == ['0c']
    with pytest.raises(exception.DeviceStateConflict):
        conductor_rpcapi.ConductorAPI().activate_device(ctx, device.uuid)


def test_failed_install_is_an_error_with_the_reason(agent, ctx):
    fake = agent.tracker.drivers['fake_driver']

    def install(device):
        raise exception.DriverError(driver='fake', reason='no firmware')

    fake.install = install
    device = _only_device(ctx)
    result = conductor_rpcapi.ConductorAPI().activate_device(ctx, device.uuid)
    assert result.status == states.DEVICE_ERROR
    assert 'no firmware' in result.status_reason
    assert result.status_reason.startswith(lifecycle.ACTIVATION_FAILED)


def test_unknown_device(agent, ctx):
    with pytest.raises(exception.DeviceNotFound):
        conductor_rpcapi.ConductorAPI().activate_device(
            ctx, '00000000-0000-0000-0000-000000000000')


def test_unreachable_agent_leaves_the_device_inactive(agent, ctx):
    class Silent:
        def install_device(self, *args, **kwargs):
            import oslo_messaging as messaging
            raise messaging.MessagingTimeout('no agent')

    device = _only_device(ctx)
    with pytest.raises(exception.AgentUnavailable):
        lifecycle.activate(ctx, device.uuid, Silent())
    assert device_obj.Device.get(ctx, device.uuid).status == \
        states.DEVICE_INACTIVE


def test_unhealthy_device_is_error_until_healthy(agent, ctx, override):
    fake = agent.tracker.drivers['fake_driver']
    from cyborg.drivers import base
    fake.health = lambda device: base.Health(False, 'thermal trip')
    agent.report()
    device = _only_device(ctx)
    assert device.status == states.DEVICE_ERROR
    assert device.status_reason == 'unhealthy: thermal trip'
    fake.health = lambda device: base.HEALTHY
    agent.report()
    assert _only_device(ctx).status == states.DEVICE_INACTIVE


def test_auto_activation(stack, ctx, override):
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack()
    agent.report()
    assert _only_device(ctx).status == states.DEVICE_READY


def test_interrupted_activation_is_recovered(agent, ctx, db):
    device = _only_device(ctx)
    old = datetime.datetime(2020, 1, 1)
    with db.begin() as conn:
        conn.execute(sa.update(models.Device.__table__)
                     .values(status=states.DEVICE_ACTIVATING, updated_at=old))
    assert lifecycle.recover_activations(ctx, 60) == 1
    assert device_obj.Device.get(ctx, device.uuid).status == \
        states.DEVICE_INACTIVE
