"""Draining devices: no new bind, and maintenance once the last unbinds."""

import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main


def _bound(session, device_ids):
    """``{device id: ARQs bound to it}`` of those with any."""
    if not device_ids:
        return {}
    arq, dep = models.AcceleratorRequest, models.Deployable
    return dict(session.execute(
        sa.select(dep.device_id, sa.func.count(arq.id))
        .join(dep, arq.deployable_id == dep.id)
        .where(dep.device_id.in_(sorted(device_ids)),
               arq.state.in_(states.ARQ_HOLDS_DEVICE))
        .group_by(dep.device_id)).all())


def _left(count):
    return '%s%d accelerator request%s still bound' % (
        states.DRAINING_LEFT, count, '' if count == 1 else 's')


def left(reason):
    """The count of bound ARQs a draining device's ``reason`` says."""
    if not (reason or '').startswith(states.DRAINING_LEFT):
        return 0
    return int(reason[len(states.DRAINING_LEFT):].split()[0])


def _maintained():
    return states.MAINTAINING_FROM + states.DEVICE_READY


@session.retry_on_conflict
@main.writer
def start(context, uuid):
    """Drain a ready device: maintaining at once when nothing is bound to
    it, else draining. Idempotent on a draining device.

    :returns: the device row.
    :raises DeviceNotFound: no such device.
    :raises DeviceStateConflict: it is neither ready nor draining.
    """
    device = context.session.scalars(
        sa.select(models.Device).where(models.Device.uuid == uuid)
        .with_for_update()).first()
    if device is None:
        raise exception.DeviceNotFound(uuid=uuid)
    if device.status == states.DEVICE_DRAINING:
        return device
    if device.status != states.DEVICE_READY:
        raise exception.DeviceStateConflict(
            uuid=uuid, status=device.status, expected=states.DEVICE_READY,
            action='drain')
    count = _bound(context.session, [device.id]).get(device.id, 0)
    if count:
        device.status, device.status_reason = (states.DEVICE_DRAINING,
                                               _left(count))
    else:
        device.status, device.status_reason = (states.DEVICE_MAINTAINING,
                                               _maintained())
    device.updated_at = clock.now(context.session)
    return device


@session.retry_on_conflict
@main.writer
def settle(context):
    """Bring every draining device's count up to date; those with nothing
    bound any more are maintaining.

    :returns: ``[(uuid, hostname)]`` of the devices now maintaining.
    """
    session = context.session
    draining = session.execute(
        sa.select(models.Device.id, models.Device.uuid,
                  models.Device.hostname, models.Device.status_reason)
        .where(models.Device.status == states.DEVICE_DRAINING)).all()
    if not draining:
        return []
    bound = _bound(session, [row.id for row in draining])
    done = []
    for row in draining:
        count = bound.get(row.id, 0)
        values = ({'status': states.DEVICE_MAINTAINING,
                   'status_reason': _maintained()} if not count
                  else {'status_reason': _left(count)})
        if not count or values['status_reason'] != row.status_reason:
            swapped = session.execute(
                sa.update(models.Device)
                .where(models.Device.id == row.id,
                       models.Device.status == states.DEVICE_DRAINING)
                .values(updated_at=clock.utc_now(), **values)).rowcount
            if swapped and not count:
                done.append((row.uuid, row.hostname))
    return done
