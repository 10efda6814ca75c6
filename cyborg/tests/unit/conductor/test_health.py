"""The conductor's health loop: holds, hysteresis, flapping, enable."""

import datetime
import json

import pytest
import sqlalchemy as sa

from cyborg import states
from cyborg.conductor import health
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.db import models
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.objects import device as device_obj

INTERVAL = 10


class _Agents:
    """Stands in for the agents' RPC API: records what they are told."""

    def __init__(self):
        self.told = []

    def update_device_states(self, context, host, found):
        self.told.extend((host, state['uuid'], state['status'])
                         for state in found)
        return True


def _report(state=states.HEALTH_OK, reason=None, sources=('pci', 'aer')):
    found = report.HostReport(host='node1', devices=fake.FakeDriver().discover(
        base.DiscoveryContext('node1')))
    for device in found.devices:
        device.health, device.health_reason = state, reason
        device.health_sources = list(sources)
        device.fault = reason if state == states.HEALTH_FAILED else None
    return found


def _apply(ctx, state=states.HEALTH_OK, reason=None, sources=('pci',)):
    return inventory.apply_report(ctx, _report(state, reason, sources),
                                  details={'report_interval': INTERVAL})


def _device(ctx):
    (device,) = device_obj.Device.list(ctx)
    return device


def _checks_since_change(db, count):
    """The agent heartbeated ``count`` checks after the last change."""
    with db.begin() as conn:
        since = conn.execute(sa.select(models.Device.health_since)).scalar()
        conn.execute(sa.update(models.Service).values(
            last_seen_up=since + datetime.timedelta(
                seconds=INTERVAL * (count - 1))))


def _ready(ctx):
    device = _device(ctx)
    with_status = lifecycle.device_db.swap_status(
        ctx, device.uuid, device.status, states.DEVICE_READY)
    assert with_status
    return device


@pytest.fixture
def ready(db, ctx, override):
    override('health_recover_after', 3, group='conductor')
    _apply(ctx)
    return _ready(ctx)


def test_a_new_healthy_device_shows_its_checks(db, ctx):
    result = _apply(ctx, sources=('pci', 'aer'))
    device = _device(ctx)
    assert (device.health, device.health_reason, device.health_sources) == (
        states.HEALTH_OK, None, ['aer', 'pci'])
    assert device.status == states.DEVICE_INACTIVE
    assert 'health_changes' not in result


def test_a_failed_device_is_held_and_reserved_at_once(ready, ctx):
    result = _apply(ctx, states.HEALTH_FAILED, 'AER: 1 fatal error')
    device = _device(ctx)
    assert device.status == states.DEVICE_ERROR
    assert device.status_reason == 'unhealthy: AER: 1 fatal error'
    assert device.health == states.HEALTH_FAILED
    (state,) = result['devices']
    assert state['status'] == states.DEVICE_ERROR
    assert all(p['reserved'] for p in state['providers'].values())


def test_it_comes_back_after_enough_healthy_checks(ready, ctx, db):
    agents = _Agents()
    _apply(ctx, states.HEALTH_FAILED, 'too hot')
    _apply(ctx)
    assert _device(ctx).status == states.DEVICE_ERROR
    _checks_since_change(db, 2)
    assert health.recover(ctx, agents) == 0
    assert _device(ctx).status == states.DEVICE_ERROR
    _checks_since_change(db, 3)
    assert health.recover(ctx, agents) == 1
    device = _device(ctx)
    assert (device.status, device.status_reason) == (states.DEVICE_READY,
                                                     None)
    assert agents.told == [('node1', device.uuid, states.DEVICE_READY)]
    assert health.recover(ctx, agents) == 0


def test_a_degraded_device_is_not_held_and_counts_as_healthy(ready, ctx,
                                                             db):
    _apply(ctx, states.HEALTH_DEGRADED, 'link x8 of x16')
    assert _device(ctx).status == states.DEVICE_READY
    _apply(ctx, states.HEALTH_FAILED, 'gone')
    _apply(ctx, states.HEALTH_DEGRADED, 'link x8 of x16')
    _checks_since_change(db, 3)
    assert health.recover(ctx, _Agents()) == 1
    assert _device(ctx).status == states.DEVICE_READY


def test_unknown_health_does_not_bring_it_back(ready, ctx, db):
    _apply(ctx, states.HEALTH_FAILED, 'gone')
    _apply(ctx, states.HEALTH_UNKNOWN, 'nothing readable')
    _checks_since_change(db, 10)
    assert health.recover(ctx, _Agents()) == 0


def test_a_held_inactive_device_returns_inactive(db, ctx, override):
    override('health_recover_after', 1, group='conductor')
    _apply(ctx, states.HEALTH_FAILED, 'gone')
    assert _device(ctx).status == states.DEVICE_ERROR
    _apply(ctx)
    _checks_since_change(db, 1)
    assert health.recover(ctx, _Agents()) == 1
    assert _device(ctx).status == states.DEVICE_INACTIVE


def test_a_flapping_device_waits_for_an_operator(ready, ctx, db, override):
    override('health_flap_limit', 3, group='conductor')
    for _ in range(2):
        _apply(ctx, states.HEALTH_FAILED, 'link down')
        _apply(ctx)
    device = _device(ctx)
    assert device.status == states.DEVICE_ERROR
    assert device.status_reason.startswith(states.FLAPPING)
    assert device.health == states.HEALTH_OK
    _checks_since_change(db, 10)
    assert health.recover(ctx, _Agents()) == 0
    agents = _Agents()
    lifecycle.enable(ctx, device.uuid, agents)
    device = _device(ctx)
    assert (device.status, device.status_reason) == (states.DEVICE_READY,
                                                     None)
    # Its count starts over: one more failure is no flap.
    _apply(ctx, states.HEALTH_FAILED, 'link down')
    assert _device(ctx).status_reason == 'unhealthy: link down'


def test_changes_outside_the_window_are_not_flaps(ready, ctx, db, override):
    override('health_flap_limit', 2, group='conductor')
    override('health_flap_window', 60, group='conductor')
    for _ in range(3):
        _apply(ctx, states.HEALTH_FAILED, 'link down')
        _apply(ctx)
        with db.begin() as conn:
            since = conn.execute(
                sa.select(models.Device.health_flaps_since)).scalar()
            conn.execute(sa.update(models.Device).values(
                health_flaps_since=since - datetime.timedelta(seconds=120)))
    assert not _device(ctx).status_reason.startswith(states.FLAPPING)


def test_enable_forces_a_failed_device_back(ready, ctx):
    _apply(ctx, states.HEALTH_FAILED, 'too hot')
    device = lifecycle.enable(ctx, _device(ctx).uuid, _Agents())
    assert device.status == states.DEVICE_READY
    # NOTE(tests): the verdict is the agent's next check's; meanwhile the
    # device takes binds, as Placement offers it.
    assert (device.health, device.health_reason) == (
        states.HEALTH_UNKNOWN, 'enabled by an operator after: too hot')
    assert states.refuses_binds(device.status, device.health) is None


def test_an_activation_failure_is_not_overwritten(db, ctx):
    _apply(ctx)
    device = _device(ctx)
    reason = states.ACTIVATION_FAILED + 'no firmware'
    lifecycle.device_db.swap_status(ctx, device.uuid, states.DEVICE_INACTIVE,
                                    states.DEVICE_ERROR, reason)
    _apply(ctx, states.HEALTH_FAILED, 'too hot')
    device = _device(ctx)
    assert (device.status, device.status_reason) == (states.DEVICE_ERROR,
                                                     reason)
    assert device.health == states.HEALTH_FAILED


def test_an_old_agents_fault_is_a_failure(ready, ctx):
    old = _report()
    for device in old.devices:
        for name in ('health', 'health_reason', 'health_sources'):
            vars(device).pop(name, None)
        device.fault = 'fell off the bus'
    inventory.apply_report(ctx, old)
    device = _device(ctx)
    assert device.status_reason == 'unhealthy: fell off the bus'
    assert device.health == states.HEALTH_FAILED


def test_details_say_when_checked_and_which_arqs_are_affected(ready, ctx,
                                                              db):
    _apply(ctx, states.HEALTH_FAILED, 'too hot')
    device = _device(ctx)
    with db.begin() as conn:
        dep_id = conn.execute(sa.select(models.Deployable.id)).scalar()
        profile = conn.execute(sa.insert(models.DeviceProfile).values(
            uuid='7d4bfd51-6d4b-4f7c-8a0e-2a0d5b9c9d11', name='p',
            profile_json=json.dumps({'groups': []}))).inserted_primary_key[0]
        for uuid, state in (('a' * 8 + '-0000-4000-8000-' + '0' * 12,
                             states.ARQ_BOUND),
                            ('b' * 8 + '-0000-4000-8000-' + '0' * 12,
                             states.ARQ_UNBOUND)):
            conn.execute(sa.insert(models.AcceleratorRequest).values(
                uuid=uuid, state=state, device_profile_id=profile,
                device_profile_group_id=0, deployable_id=dep_id,
                project_id='p-' + uuid[0]))
    found = device_obj.Device.health_details(ctx, ['node1'])
    assert found['affected'] == {
        device.uuid: ['a' * 8 + '-0000-4000-8000-' + '0' * 12]}
    # Whose each is, for the API to show each caller its own.
    assert found['projects'] == {
        'a' * 8 + '-0000-4000-8000-' + '0' * 12: 'p-a'}
    assert set(found['checked']) == {'node1'}
    assert device_obj.Device.health_details(ctx, ['other']) == {
        'checked': {}, 'affected': {}, 'projects': {}}


def test_a_flapping_device_stays_held_after_its_window(ready, ctx, db,
                                                       override):
    override('health_flap_limit', 2, group='conductor')
    override('health_flap_window', 60, group='conductor')
    _apply(ctx, states.HEALTH_FAILED, 'link down')
    _apply(ctx)
    _apply(ctx, states.HEALTH_FAILED, 'link down')
    assert _device(ctx).status_reason.startswith(states.FLAPPING)
    with db.begin() as conn:
        since = conn.execute(
            sa.select(models.Device.health_flaps_since)).scalar()
        conn.execute(sa.update(models.Device).values(
            health_flaps_since=since - datetime.timedelta(seconds=120)))
    # A failure after the window is no flap, but the hold stays the
    # operator's: the loop does not return the device when it heals.
    _apply(ctx)
    _apply(ctx, states.HEALTH_FAILED, 'link down')
    assert _device(ctx).status_reason.startswith(states.FLAPPING)
    _apply(ctx)
    _checks_since_change(db, 10)
    assert health.recover(ctx, _Agents()) == 0
    assert _device(ctx).status == states.DEVICE_ERROR
