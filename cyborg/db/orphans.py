"""Accelerator requests their creator gave up on (orphans): count, remove."""

import sqlalchemy as sa

from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main

_ARQ = models.AcceleratorRequest

# NOTE(orphans): ages are judged by the database server's clock (in SQL),
# so every conductor finds the same orphans whatever its own clock says.
# created_at itself is written by the clock of the conductor that created
# the row (a model default; reading the database's time for it would cost
# a query per create): a skew of seconds, which cyborg-status reports,
# does not matter beside [conductor] orphan_arq_age (an hour by default).
# The compare-and-swap DELETE keeps two conductors from removing one row
# twice whatever the clocks say.


def condition(older_than):
    """SQL that holds for an orphan created more than ``older_than``
    seconds ago, and never evaluates to NULL (quotas count its negation).

    An orphan is an ARQ from a device profile still Initial, with no
    instance, no device binding and no conductor working on it. The ARQ
    of a /v1 attach (no profile) is never one: its accelerator's
    attachment owns it and undoes it (cyborg.conductor.attachments).
    """
    return sa.and_(
        _ARQ.state == states.ARQ_INITIAL,
        _ARQ.device_profile_id.is_not(None),
        _ARQ.instance_uuid.is_(None),
        _ARQ.hostname.is_(None),
        _ARQ.device_rp_uuid.is_(None),
        _ARQ.deployable_id.is_(None),
        _ARQ.attach_handle_id.is_(None),
        _ARQ.owner.is_(None),
        _ARQ.created_at.is_not(None),
        _ARQ.created_at < clock.utc_ago(older_than))


@main.reader
def summary(context, older_than):
    """How many orphans are older than ``older_than`` seconds, and the age
    in seconds of the oldest one (None when there is none)."""
    count, oldest = context.session.execute(
        sa.select(sa.func.count(), sa.func.min(_ARQ.created_at))
        .where(condition(older_than))).one()
    if not count:
        return 0, None
    age = clock.now(context.session) - clock.naive(oldest)
    return count, max(0, int(age.total_seconds()))


@session.retry_on_conflict
@main.writer
def remove(context, older_than, limit=100):
    """Delete up to ``limit`` orphans older than ``older_than`` seconds,
    oldest first; returns the dicts of those this call deleted (keys as
    ``cyborg.db.arqs._values``), for their notifications.

    Each row goes by a compare-and-swap DELETE that repeats the orphan
    condition: of several conductors that found the same orphan only one
    deletes it, and one that a bind took in between (Initial ->
    BindStarted, with an instance) stays.
    """
    found = context.session.execute(
        sa.select(_ARQ, models.DeviceProfile.name)
        .join(models.DeviceProfile,
              models.DeviceProfile.id == _ARQ.device_profile_id)
        .where(condition(older_than))
        .order_by(_ARQ.id).limit(limit)).all()
    gone = []
    for row, profile_name in found:
        values = {name: getattr(row, name) for name in (
            'id', 'uuid', 'state', 'device_profile_group_id', 'hostname',
            'device_rp_uuid', 'instance_uuid', 'project_id', 'created_at',
            'updated_at')}
        values.update(device_profile_name=profile_name, handle=None)
        deleted = context.session.execute(
            sa.delete(_ARQ).where(_ARQ.id == row.id, condition(older_than))
            .execution_options(synchronize_session=False)).rowcount
        if deleted:
            gone.append(values)
    return gone
