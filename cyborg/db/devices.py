"""Queries on devices beyond create/read/update/delete: status changes."""

import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main


@session.retry_on_conflict
@main.writer
def swap_status(context, uuid, expected, status, reason=None):
    """Compare-and-swap a device's status; returns whether it swapped.

    :raises DeviceStateConflict: ``states.DEVICE_TRANSITIONS`` forbids the
        change.
    """
    allowed = states.DEVICE_TRANSITIONS.get(expected, set())
    if status not in allowed:
        raise exception.DeviceStateConflict(uuid=uuid, status=expected,
                                            expected='allowed', action=status)
    return bool(context.session.execute(
        sa.update(models.Device)
        .where(models.Device.uuid == uuid, models.Device.status == expected)
        .values(status=status, status_reason=reason,
                updated_at=clock.utc_now())).rowcount)


@session.retry_on_conflict
@main.writer
def reset_activations(context, older_than):
    """Set back to inactive the devices activating for over ``older_than``
    seconds; returns how many."""
    cutoff = clock.utc_ago(older_than)
    return context.session.execute(
        sa.update(models.Device)
        .where(models.Device.status == states.DEVICE_ACTIVATING,
               sa.func.coalesce(models.Device.updated_at,
                                models.Device.created_at) < cutoff)
        .values(status=states.DEVICE_INACTIVE, status_reason=None,
                updated_at=clock.utc_now())).rowcount
