"""Draining a device: no new bind, maintenance once the last unbinds."""


import pytest

from cyborg import exception
from cyborg import states
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.db import arqs as arq_db
from cyborg.objects import device as device_obj
from cyborg.tests import arq_rows


@pytest.fixture
def device(ready_device):
    return ready_device


def _status(ctx, uuid):
    found = device_obj.Device.get(ctx, uuid)
    return found.status, found.status_reason


def test_a_device_with_nothing_bound_is_maintaining_at_once(device, ctx):
    lifecycle.drain(ctx, device.uuid)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_MAINTAINING, 'maintenance; was ready')


def test_bound_arqs_run_on_and_no_new_bind_is_taken(device, ctx, db):
    first, second, late = arq_rows.initial(db, 3)
    for uuid in (first, second):
        assert arq_rows.bind(ctx, db, [uuid]) == ([uuid], [])
    lifecycle.drain(ctx, device.uuid)
    assert _status(ctx, device.uuid) == (
        states.DEVICE_DRAINING, 'draining: 2 accelerator requests still '
                                'bound')
    # Idempotent; and nothing new binds meanwhile.
    lifecycle.drain(ctx, device.uuid)
    assert arq_rows.bind(ctx, db, [late]) == ([], [late])
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
    (uuid,) = arq_rows.initial(db, 1)
    arq_rows.bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    lifecycle.enable(ctx, device.uuid, agent_api=None)
    assert _status(ctx, device.uuid) == (states.DEVICE_READY, None)


def test_disable_ends_a_drain_in_maintenance_from_ready(device, ctx, db):
    (uuid,) = arq_rows.initial(db, 1)
    arq_rows.bind(ctx, db, [uuid])
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
    (uuid,) = arq_rows.initial(db, 1)
    arq_rows.bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    (state,) = inventory.host_states(ctx, 'node1')
    assert all(p['reserved'] for p in state['providers'].values())


def test_older_readers_see_maintaining(device, ctx, db):
    (uuid,) = arq_rows.initial(db, 1)
    arq_rows.bind(ctx, db, [uuid])
    lifecycle.drain(ctx, device.uuid)
    found = device_obj.Device.get(ctx, device.uuid)
    primitive = found.obj_to_primitive(target_version='1.2')
    assert primitive['cyborg_object.data']['status'] == 'maintaining'
    assert 'health' not in primitive['cyborg_object.data']
