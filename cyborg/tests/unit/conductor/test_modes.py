"""Switching a device's partition mode in the conductor: the checks, the
hold in maintenance, and what a failed switch leaves."""

import json

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import lifecycle
from cyborg.conductor import modes
from cyborg.db import models
from cyborg.tests import arq_rows

MODES = ['passthrough', 'vgpu:nvidia-222', 'vgpu:nvidia-223']


class _Agent:
    """Stands in for the agents' RPC API; ``switch`` is what
    set_device_mode does (None: succeed)."""

    def __init__(self, db):
        self.db = db
        self.calls = []
        self.told = []
        self.switch = None

    def set_device_mode(self, context, host, driver_name, address, mode):
        with self.db.connect() as conn:
            held = conn.execute(sa.select(models.Device.status,
                                          models.Device.status_reason)).one()
        self.calls.append((host, driver_name, address, mode, tuple(held)))
        if self.switch is not None:
            raise self.switch
        with self.db.begin() as conn:
            conn.execute(sa.update(models.Device).values(mode=mode))

    def update_device_states(self, context, host, found):
        self.told.extend(state['status'] for state in found)
        return True


@pytest.fixture
def device(ready_device, db):
    """The ready fake device, as if its driver offered MODES."""
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(
            mode='passthrough', modes=json.dumps(MODES)))
    return ready_device


@pytest.fixture
def agent(db):
    return _Agent(db)


def _state(db):
    with db.connect() as conn:
        return tuple(conn.execute(sa.select(
            models.Device.status, models.Device.status_reason,
            models.Device.mode)).one())


def test_a_switch_holds_the_device_until_the_agent_is_done(device, ctx, db,
                                                          agent):
    switched = modes.set_mode(ctx, device.uuid, 'vgpu:nvidia-222', agent)
    ((host, driver, address, mode, held),) = agent.calls
    assert (host, driver, mode) == ('node1', device.driver_name,
                                    'vgpu:nvidia-222')
    assert address.count(':') == 2 and '.' in address
    assert held == (states.DEVICE_MAINTAINING,
                    'changing mode to vgpu:nvidia-222; was ready')
    assert switched.mode == 'vgpu:nvidia-222'
    assert _state(db) == (states.DEVICE_READY, None, 'vgpu:nvidia-222')
    # reserved in Placement meanwhile, freed after
    assert agent.told == [states.DEVICE_MAINTAINING, states.DEVICE_READY]


def test_the_mode_it_is_in_changes_nothing(device, ctx, db, agent):
    assert modes.set_mode(ctx, device.uuid, 'passthrough', agent).mode == (
        'passthrough')
    assert agent.calls == [] and agent.told == []


def test_a_mode_not_offered_is_a_400_naming_those_offered(device, ctx,
                                                          agent):
    with pytest.raises(exception.DeviceModeNotOffered) as caught:
        modes.set_mode(ctx, device.uuid, 'vgpu:nvidia-999', agent)
    assert caught.value.message == (
        'Device %s does not offer the mode vgpu:nvidia-999; it offers '
        'passthrough, vgpu:nvidia-222, vgpu:nvidia-223.' % device.uuid)
    assert agent.calls == []


def test_a_device_without_modes(device, ctx, db, agent):
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(mode=None, modes=None))
    with pytest.raises(exception.DeviceModeNotOffered) as caught:
        modes.set_mode(ctx, device.uuid, 'passthrough', agent)
    assert caught.value.message.endswith('it offers none.')


def test_bound_arqs_refuse_the_switch_and_are_listed(device, ctx, db,
                                                     agent):
    first, second = arq_rows.initial(db, 2)
    assert arq_rows.bind(ctx, db, [first, second])[0] == [first, second]
    with pytest.raises(exception.DeviceModeInUse) as caught:
        modes.set_mode(ctx, device.uuid, 'vgpu:nvidia-222', agent)
    assert caught.value.message == (
        'Device %s cannot change its mode while accelerator requests are '
        'bound to it: %s.' % (device.uuid, ', '.join(sorted([first,
                                                             second]))))
    assert _state(db) == (states.DEVICE_READY, None, 'passthrough')
    assert agent.calls == []


@pytest.mark.parametrize('status', [states.DEVICE_ERROR,
                                    states.DEVICE_DRAINING,
                                    states.DEVICE_ACTIVATING])
def test_only_from_ready_maintaining_or_inactive(device, ctx, db, agent,
                                                 status):
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(status=status))
    with pytest.raises(exception.DeviceStateConflict):
        modes.set_mode(ctx, device.uuid, 'vgpu:nvidia-222', agent)


def test_a_maintained_device_stays_maintained(device, ctx, db, agent):
    lifecycle.disable(ctx, device.uuid)
    before = _state(db)
    modes.set_mode(ctx, device.uuid, 'vgpu:nvidia-223', agent)
    assert _state(db) == before[:2] + ('vgpu:nvidia-223',)


@pytest.mark.parametrize('error, expected', [
    (exception.DeviceModeSwitchFailed(uuid='u', mode='m',
                                      reason='inventory in use'),
     exception.DeviceModeSwitchFailed),
    (exception.DeviceHoldsVgpus(uuid='0000:5e:00.0', mdevs='mdev-1'),
     exception.DeviceHoldsVgpus),
    (exception.PlacementUnavailable(reason='down'),
     exception.DeviceModeSwitchFailed),
    (messaging.MessagingTimeout('no answer'), exception.AgentUnavailable),
])
def test_a_failed_switch_leaves_the_device_as_it_was(device, ctx, db,
                                                     agent, error,
                                                     expected):
    agent.switch = error
    with pytest.raises(expected) as caught:
        modes.set_mode(ctx, device.uuid, 'vgpu:nvidia-222', agent)
    assert _state(db) == (states.DEVICE_READY, None, 'passthrough')
    assert agent.told == [states.DEVICE_MAINTAINING, states.DEVICE_READY]
    if isinstance(error, exception.PlacementUnavailable):
        assert caught.value.message == (
            'Device %s could not change to the mode vgpu:nvidia-222: '
            'Placement is unavailable: down' % device.uuid)
    if isinstance(error, exception.CyborgException):
        # the device is named by its uuid, not the agent's PCI address
        assert caught.value.message.startswith('Device %s ' % device.uuid)
