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


def test_unhealthy_device_is_error_until_healthy_long_enough(agent, ctx):
    fake = agent.tracker.drivers['fake_driver']
    from cyborg.drivers import base
    fake.health = lambda device: base.Health(False, 'thermal trip')
    agent.report()
    device = _only_device(ctx)
    assert device.status == states.DEVICE_ERROR
    assert device.status_reason == 'unhealthy: thermal trip'
    fake.health = lambda device: base.HEALTHY
    agent.report()
    # NOTE(tests): held until the health loop has seen enough healthy
    # checks (conductor/test_health.py); the report only records health.
    device = _only_device(ctx)
    assert (device.status, device.health) == (states.DEVICE_ERROR, 'ok')


def _no_ping_pong(monkeypatch):
    """Make the old conductor->agent->conductor activation fail loudly."""
    from cyborg.conductor import agent_rpcapi

    def refused(*args, **kwargs):
        raise AssertionError('activation went through RPC')

    monkeypatch.setattr(agent_rpcapi.AgentAPI, 'install_device', refused)
    monkeypatch.setattr(conductor_rpcapi.ConductorAPI, 'activate_device',
                        refused)


def _answers(agent):
    """The conductor's answers to the agent's whole reports, as they come.
    """
    answers = []
    real = agent.conductor.report_data

    def report_data(*args, **kwargs):
        answers.append(real(*args, **kwargs))
        return answers[-1]

    agent.conductor.report_data = report_data
    return answers


def test_auto_activation(stack, ctx, override, monkeypatch):
    override('auto_activate_new_devices', True, group='conductor')
    _no_ping_pong(monkeypatch)
    agent = stack()
    installed = []
    agent.tracker.drivers['fake_driver'].install = installed.append
    agent.report()
    device = _only_device(ctx)
    assert device.status == states.DEVICE_READY
    assert device.status_reason is None
    assert [d.controlpath.cpid_info['bus'] for d in installed] == ['0c']
    assert agent.installed == {}
    # NOTE(tests): the last answer the agent applied says ready, so
    # Placement frees the device without waiting for a heal.
    (state,) = agent.last_result['devices']
    assert state['status'] == states.DEVICE_READY
    assert agent.last_result['install'] == []
    agent.report()
    assert installed == installed[:1]


def test_new_device_is_activating_in_the_answer_that_adds_it(stack, ctx,
                                                             override):
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack()
    answers = _answers(agent)
    agent.report()
    (answer,) = answers
    (state,) = answer['devices']
    assert state['status'] == states.DEVICE_ACTIVATING
    assert answer['activate'] == []
    (item,) = answer['install']
    assert item['uuid'] == state['uuid']
    assert item['driver_name'] == 'fake'
    assert item['controlpath'] == state['controlpath']


def test_auto_activation_failure_is_an_error_with_the_reason(
        stack, ctx, override, monkeypatch):
    override('auto_activate_new_devices', True, group='conductor')
    _no_ping_pong(monkeypatch)
    agent = stack()

    def install(device):
        raise exception.DriverError(driver='fake', reason='no firmware')

    agent.tracker.drivers['fake_driver'].install = install
    agent.report()
    device = _only_device(ctx)
    assert device.status == states.DEVICE_ERROR
    assert device.status_reason.startswith(states.ACTIVATION_FAILED)
    assert 'no firmware' in device.status_reason
    assert agent.installed == {}


def test_install_outcome_is_kept_until_a_conductor_takes_it(
        stack, ctx, override):
    import oslo_messaging as messaging

    override('auto_activate_new_devices', True, group='conductor')
    agent = stack()
    real = agent.conductor.report_delta
    calls = []

    def lost(*args, **kwargs):
        calls.append(1)
        raise messaging.MessagingTimeout('conductor gone')

    agent.conductor.report_delta = lost
    agent.report()
    assert calls and len(agent.installed) == 1
    assert _only_device(ctx).status == states.DEVICE_ACTIVATING
    agent.conductor.report_delta = real
    agent.report()
    assert agent.installed == {}
    assert _only_device(ctx).status == states.DEVICE_READY


@pytest.mark.parametrize('agent_rpc,pin', [('1.5', None), ('1.6', '1.5')])
def test_older_agents_still_ask_for_activation(stack, ctx, override,
                                               monkeypatch, agent_rpc, pin):
    """An agent before RPC 1.6 (or any, while [upgrade_levels] agent pins
    1.5) is answered ``activate`` and calls activate_device, as before."""
    override('auto_activate_new_devices', True, group='conductor')
    if pin:
        override('agent', pin, group='upgrade_levels')
    agent = stack()
    monkeypatch.setattr(agent, '_identity', lambda: {
        'version': 'old', 'rpc_version': agent_rpc})
    answers = _answers(agent)
    agent.report()
    (answer,) = answers
    assert answer['install'] == []
    assert answer['activate'] == [answer['devices'][0]['uuid']]
    assert _only_device(ctx).status == states.DEVICE_READY


def test_install_outcome_for_a_device_no_longer_activating(stack, ctx,
                                                           override):
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack()
    agent.tracker.drivers['fake_driver'].install = lambda device: None
    reports = []
    real = agent.report

    def report_once():
        # NOTE(tests): stop after the install step, before its outcome
        # is sent, and let an operator's change land in between.
        if not reports:
            reports.append(1)
            return real()
        return None

    agent.report = report_once
    agent.report()
    device = _only_device(ctx)
    assert device.status == states.DEVICE_ACTIVATING
    assert lifecycle._swap(ctx, device.uuid, states.DEVICE_ACTIVATING,
                           states.DEVICE_INACTIVE)
    agent.report = real
    agent.report()
    assert agent.installed == {}
    assert _only_device(ctx).status == states.DEVICE_INACTIVE


def test_interrupted_activation_is_recovered(agent, ctx, db):
    device = _only_device(ctx)
    old = datetime.datetime(2020, 1, 1)
    with db.begin() as conn:
        conn.execute(sa.update(models.Device.__table__)
                     .values(status=states.DEVICE_ACTIVATING, updated_at=old))
    assert lifecycle.recover_activations(ctx, 60) == 1
    assert device_obj.Device.get(ctx, device.uuid).status == \
        states.DEVICE_INACTIVE


def test_auto_activation_left_unreported_is_recovered(stack, ctx, override,
                                                      db):
    """A device marked activating in the report that added it, whose
    agent died before saying how its install step went, is inactive again
    once the recovery's time has passed."""
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack()
    agent.report = lambda: None
    from cyborg.agent import reporting
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reporting.Reporter, '_install', lambda self, w: False)
        reporting.Reporter.report(agent)
    device = _only_device(ctx)
    assert device.status == states.DEVICE_ACTIVATING
    assert lifecycle.recover_activations(ctx, 3600) == 0
    old = datetime.datetime(2020, 1, 1)
    with db.begin() as conn:
        conn.execute(sa.update(models.Device.__table__)
                     .values(created_at=old, updated_at=None))
    assert lifecycle.recover_activations(ctx, 60) == 1
    assert _only_device(ctx).status == states.DEVICE_INACTIVE
