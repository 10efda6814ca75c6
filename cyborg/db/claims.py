"""Device claims: which conductor runs host-side work on a device now."""

import sqlalchemy as sa

from cyborg import exception
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main

# NOTE(claims): a claim is three columns of the device row, written by
# one compare-and-swap UPDATE (WHERE claimed_by IS NULL), so that of two
# conductors claiming one device at once exactly one changes the row;
# the other reads who holds it and is refused. A claim lasts while its
# conductor heartbeats: takeover clears those of dead conductors.

_DEV = models.Device


@main.reader
def _refusal(context, uuids):
    """DeviceClaimed naming the first of ``uuids`` that is claimed, or
    DeviceNotFound when one is gone."""
    rows = {row.uuid: row for row in context.session.execute(
        sa.select(_DEV.uuid, _DEV.claimed_by, _DEV.claimed_for)
        .where(_DEV.uuid.in_(uuids))).all()}
    for uuid in uuids:
        row = rows.get(uuid)
        if row is None:
            return exception.DeviceNotFound(uuid=uuid)
        if row.claimed_by is not None:
            return exception.DeviceClaimed(
                uuid=uuid, workflow=row.claimed_for,
                conductor=row.claimed_by)
    # NOTE(claims): the holder released it since; the caller is refused
    # all the same, and may try again.
    return exception.DeviceClaimed(uuid=uuids[0], workflow='work',
                                   conductor='another conductor')


def claim(context, uuids, workflow, owner):
    """Claim every one of the devices ``uuids`` for ``workflow``, run by
    conductor ``owner``: all of them, or none.

    :raises DeviceClaimed: one is claimed (by any conductor, this one
        too); the message names it, its workflow and conductor.
    :raises DeviceNotFound: one does not exist.
    """
    uuids = sorted(set(uuids))
    if not uuids:
        return
    try:
        _claim(context, uuids, workflow, owner)
    except exception.DeviceClaimed:
        # NOTE(claims): read once the claims of the others were rolled
        # back, so that the refusal names another's claim, not one of
        # this transaction's.
        raise _refusal(context, uuids) from None


@session.retry_on_conflict
@main.writer
def _claim(context, uuids, workflow, owner):
    taken = context.session.execute(
        sa.update(_DEV)
        .where(_DEV.uuid.in_(uuids), _DEV.claimed_by.is_(None))
        .values(claimed_by=owner, claimed_for=workflow,
                claimed_at=clock.utc_now())
        .execution_options(synchronize_session=False)).rowcount
    if taken != len(uuids):
        # NOTE(claims): raised to roll back what this UPDATE claimed;
        # ``claim`` raises the one that names the holder.
        raise exception.DeviceClaimed(uuid=uuids[0], workflow=workflow,
                                      conductor=owner)


@session.retry_on_conflict
@main.writer
def release(context, uuids, workflow, owner):
    """Release the claims ``owner`` holds for ``workflow`` on ``uuids``;
    a claim takeover cleared (and maybe another conductor took) is left.

    :returns: how many were released.
    """
    if not uuids:
        return 0
    return context.session.execute(
        sa.update(_DEV)
        .where(_DEV.uuid.in_(sorted(set(uuids))), _DEV.claimed_by == owner,
               _DEV.claimed_for == workflow)
        .values(claimed_by=None, claimed_for=None, claimed_at=None)
        .execution_options(synchronize_session=False)).rowcount


@main.reader
def holder(context, uuid):
    """``(conductor, workflow)`` of the claim on a device, or None."""
    row = context.session.execute(
        sa.select(_DEV.claimed_by, _DEV.claimed_for)
        .where(_DEV.uuid == uuid)).first()
    if row is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return None if row.claimed_by is None else tuple(row)


@main.reader
def devices_of(context, host, driver_name):
    """The uuids of the devices a driver has on a host."""
    return sorted(context.session.scalars(
        sa.select(_DEV.uuid).where(_DEV.hostname == host,
                                   _DEV.driver_name == driver_name)))


@session.retry_on_conflict
@main.writer
def clear_stale(context, binary, dead_after, mine=None):
    """Clear the claims of conductors that stopped heartbeating.

    :param binary: the conductors' binary in the services table.
    :param dead_after: seconds without a heartbeat (judged by the
        database's clock) after which a conductor is dead; a holder with
        no service row is dead too.
    :param mine: this conductor's host at its start: the claims a former
        process of this host held are cleared too, its row being fresh.
    :returns: ``[(device uuid, conductor, workflow)]`` cleared.
    """
    live = (sa.select(models.Service.host)
            .where(models.Service.binary == binary,
                   models.Service.last_seen_up >= clock.utc_ago(dead_after)))
    if mine is not None:
        live = live.where(models.Service.host != mine)
    stale = sa.and_(_DEV.claimed_by.is_not(None),
                    _DEV.claimed_by.not_in(live))
    # NOTE(claims): a device row a stopped conductor's open transaction
    # holds locked is passed over, and cleared on a later pass, rather than
    # holding up this pass and the takeover after it (ownership.take).
    rows = context.session.execute(
        sa.select(_DEV.uuid, _DEV.claimed_by, _DEV.claimed_for)
        .where(stale).order_by(_DEV.id)
        .with_for_update(skip_locked=True)).all()
    cleared = []
    for row in rows:
        # NOTE(claims): compare-and-swap on the holder read: a claim
        # released and taken again meanwhile is a live one.
        if context.session.execute(
                sa.update(_DEV)
                .where(_DEV.uuid == row.uuid,
                       _DEV.claimed_by == row.claimed_by)
                .values(claimed_by=None, claimed_for=None, claimed_at=None)
                .execution_options(synchronize_session=False)).rowcount:
            cleared.append(tuple(row))
    return cleared


@session.retry_on_conflict
@main.writer
def clear_forgotten(context, owner, keep, older_than):
    """Clear the claims ``owner`` (this live conductor) holds on devices
    other than ``keep`` for over ``older_than`` seconds: a release the
    database did not take (it was down), left by a workflow that ended.

    :returns: ``[(device uuid, workflow)]`` cleared.
    """
    where = sa.and_(_DEV.claimed_by == owner,
                    _DEV.claimed_at < clock.utc_ago(older_than))
    if keep:
        where = sa.and_(where, _DEV.uuid.not_in(sorted(keep)))
    rows = context.session.execute(
        sa.select(_DEV.uuid, _DEV.claimed_for).where(where)
        .order_by(_DEV.id)).all()
    if rows:
        context.session.execute(
            sa.update(_DEV)
            .where(where, _DEV.uuid.in_([row.uuid for row in rows]))
            .values(claimed_by=None, claimed_for=None, claimed_at=None)
            .execution_options(synchronize_session=False))
    return [tuple(row) for row in rows]
