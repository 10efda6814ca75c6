"""Draining a device: no new bind, maintenance once the last unbinds."""

import json

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.db import arqs as arq_db
from cyborg.db import models
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.objects import device as device_obj


@pytest.fixture
def device(db, ctx, override):
    override('accelerators_per_device', 4, group='fake_driver')
    inventory.apply_report(ctx, report.HostReport(
        host='node1', devices=fake.FakeDriver().discover(
            base.DiscoveryContext('node1'))))
    (found,) = device_obj.Device.list(ctx)
    assert lifecycle.device_db.swap_status(ctx, found.uuid, found.status,
                                           states.DEVICE_READY)
    return found


def _arqs(db, count):
    """``count`` Initial ARQs of a one-group profile."""
    with db.begin() as conn:
        profile = conn.execute(sa.insert(models.DeviceProfile).values(
            uuid=uuidutils.generate_uuid(), name='p',
            profile_json=json.dumps({'groups': [{}]}))
        ).inserted_primary_key[0]
        uuids = [uuidutils.generate_uuid() for _ in range(count)]
        conn.execute(sa.insert(models.AcceleratorRequest), [
            {'uuid': uuid, 'state': states.ARQ_INITIAL,
             'device_profile_id': profile, 'device_profile_group_id': 0}
            for uuid in uuids])
    return uuids


def _bind(ctx, db, uuids):
    with db.connect() as conn:
        rp = conn.execute(sa.select(models.Deployable.rp_uuid)).scalar()
    return arq_db.start_bind(ctx, {
        uuid: {'hostname': 'node1', 'device_rp_uuid': rp,
               'instance_uuid': uuidutils.generate_uuid()}
        for uuid in uuids})


def _status(ctx, uuid):
    found = device_obj.Device.get(ctx, uuid)
    return found.status, found.status_reason


def test_a_device_with_nothing_bound_is_maintaining_at_once(device, ctx):
    lifecycle.drain(ctx, device.uuid)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_MAINTAINING, 'maintenance; was ready')


def test_bound_arqs_run_on_and_no_new_bind_is_taken(device, ctx, db):
    first, second, late = _arqs(db, 3)
    for uuid in (first, second):
        assert _bind(ctx, db, [uuid]) == ([uuid], [])
    lifecycle.drain(ctx, device.uuid)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_DRAINING, 'draining: 2 accelerator requests still '
                                'bound')
    # Idempotent; and nothing new binds meanwhile.
    lifecycle.drain(ctx, device.uuid)
    assert _bind(ctx, db, [late]) == ([], [late])
    arq_db.unbind(ctx, [first])
    lifecycle.settle_drains(ctx)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_DRAINING, 'draining: 1 accelerator request still '
                                'bound')
    arq_db.unbind(ctx, [second])
    lifecycle.settle_drains(ctx)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_MAINTAINING, 'maintenance; was ready')


def test_enable_cancels_a_drain(device, ctx, db):
    (uuid,) = _arqs(db, 1)
    _bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    lifecycle.enable(ctx, device.uuid, agent_api=None)
    assert _status(ctx, device.uuid) == (states.DEVICE_READY, None)


def test_disable_ends_a_drain_in_maintenance_from_ready(device, ctx, db):
    (uuid,) = _arqs(db, 1)
    _bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    lifecycle.disable(ctx, device.uuid)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_MAINTAINING, 'maintenance; was ready')
    lifecycle.enable(ctx, device.uuid, agent_api=None)
    assert _status(ctx, device.uuid)[0] == states.DEVICE_READY


@pytest.mark.parametrize('status', [states.DEVICE_INACTIVE,
                                    states.DEVICE_MAINTAINING,
                                    states.DEVICE_ERROR])
def test_only_a_ready_device_drains(device, ctx, status):
    lifecycle.device_db.swap_status(ctx, device.uuid, states.DEVICE_READY,
                                    status)
    with pytest.raises(exception.DeviceStateConflict):
        lifecycle.drain(ctx, device.uuid)


def test_a_draining_device_is_reserved_in_placement(device, ctx, db):
    (uuid,) = _arqs(db, 1)
    _bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    (state,) = inventory.host_states(ctx, 'node1')
    assert all(p['reserved'] for p in state['providers'].values())


def test_older_readers_see_maintaining(device, ctx, db):
    (uuid,) = _arqs(db, 1)
    _bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    found = device_obj.Device.get(ctx, device.uuid)
    primitive = found.obj_to_primitive(target_version='1.2')
    assert primitive['cyborg_object.data']['status'] == 'maintaining'
    assert 'health' not in primitive['cyborg_object.data']
