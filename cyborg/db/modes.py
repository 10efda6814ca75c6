"""Changing a device's partition mode: the checks and the status it holds."""

import json

import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main

#: How the reason of a device changing its mode begins.
CHANGING = 'changing mode to '


def reason_for(mode, status):
    return '%s%s; was %s' % (CHANGING, mode, status)


def offered(device):
    """The modes a device row offers."""
    return json.loads(device.modes) if device.modes else []


@session.retry_on_conflict
@main.writer
def start(context, uuid, mode):
    """Hold the device for a change to ``mode``: maintaining (no bind
    reaches it) once nothing is bound to it.

    :returns: ``(device row, (status, reason) to return to)``; None for
        the second when the device is in ``mode`` already (nothing is
        held).
    :raises DeviceNotFound, DeviceModeNotOffered, DeviceStateConflict.
    :raises DeviceModeInUse: accelerator requests are bound to it (listed).
    """
    session = context.session
    device = session.scalars(
        sa.select(models.Device).where(models.Device.uuid == uuid)
        .with_for_update()).first()
    if device is None:
        raise exception.DeviceNotFound(uuid=uuid)
    modes = offered(device)
    if mode not in modes:
        raise exception.DeviceModeNotOffered(
            uuid=uuid, mode=mode, modes=', '.join(modes) or 'none')
    if device.mode == mode:
        return device, None
    if device.status not in states.DEVICE_CAN_CHANGE_MODE:
        raise exception.DeviceStateConflict(
            uuid=uuid, status=device.status,
            expected=' or '.join(states.DEVICE_CAN_CHANGE_MODE),
            action='change the mode of')
    arq, dep = models.AcceleratorRequest, models.Deployable
    bound = sorted(session.scalars(
        sa.select(arq.uuid).join(dep, arq.deployable_id == dep.id)
        .where(dep.device_id == device.id,
               arq.state.in_(states.ARQ_HOLDS_DEVICE))))
    if bound:
        raise exception.DeviceModeInUse(uuid=uuid, arqs=', '.join(bound))
    cleaning = session.scalars(
        sa.select(dep.name).where(dep.device_id == device.id,
                                  dep.cleaning_since.is_not(None))).first()
    if cleaning is not None:
        raise exception.DeviceStateConflict(
            uuid=uuid, status='scrubbing %s for its next tenant' % cleaning,
            expected='done', action='change the mode of')
    previous = (device.status, device.status_reason)
    device.status = states.DEVICE_MAINTAINING
    device.status_reason = reason_for(mode, previous[0])
    device.updated_at = clock.now(session)
    return device, previous


@session.retry_on_conflict
@main.writer
def finish(context, uuid, previous):
    """Return a device held by ``start`` to the ``(status, reason)`` it
    had; a no-op when something else (an operator, the health loop)
    changed it since.

    :returns: whether it was returned.
    """
    return bool(context.session.execute(
        sa.update(models.Device)
        .where(models.Device.uuid == uuid,
               models.Device.status == states.DEVICE_MAINTAINING,
               models.Device.status_reason.startswith(CHANGING))
        .values(status=previous[0], status_reason=previous[1],
                updated_at=clock.utc_now())).rowcount)
