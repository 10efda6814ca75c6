"""Which conductor holds an ARQ's work, and adopting a dead one's work."""

import json

import sqlalchemy as sa

from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main

_ARQ = models.AcceleratorRequest

#: ARQs with work in flight: a bind, an unbind whose handle is still to
#: be released on its host (the ARQ keeps the handle until then), or a
#: resolved bind whose event Nova has not been sent (the owner stays
#: until it is, so that a conductor dying in between loses no event).
_PENDING = sa.or_(_ARQ.state == states.ARQ_BIND_STARTED,
                  sa.and_(_ARQ.state == states.ARQ_UNBOUND,
                          _ARQ.attach_handle_id.is_not(None)),
                  sa.and_(_ARQ.state.in_(states.ARQ_BIND_ENDED),
                          _ARQ.owner.is_not(None)))


def _unowned(unowned_after):
    # NOTE(ownership): a bind started by a release that did not record
    # owners; its conductor is unknown, so only its age tells it is dead.
    changed = sa.func.coalesce(_ARQ.updated_at, _ARQ.created_at)
    return sa.and_(_ARQ.owner.is_(None),
                   _ARQ.state == states.ARQ_BIND_STARTED,
                   changed < clock.utc_ago(unowned_after))


@main.reader
def orphaned(context, binary, dead_after, unowned_after, mine=None,
             limit=100):
    """Work held by conductors that stopped heartbeating.

    :param binary: the conductors' binary in the services table.
    :param dead_after: seconds without a heartbeat after which an owner
        is dead; an owner with no service row is dead too.
    :param unowned_after: seconds after which a bind that records no
        owner is taken as abandoned.
    :param mine: this conductor's host at its start: what a former
        process of the same host held is abandoned, its row being fresh.
    :returns: ``[(uuid, owner or None, state)]``, oldest first.
    """
    live = (sa.select(models.Service.host)
            .where(models.Service.binary == binary,
                   models.Service.last_seen_up >= clock.utc_ago(dead_after)))
    if mine is not None:
        live = live.where(models.Service.host != mine)
    dead = sa.and_(_ARQ.owner.is_not(None), _ARQ.owner.not_in(live),
                   _PENDING)
    rows = context.session.execute(
        sa.select(_ARQ.uuid, _ARQ.owner, _ARQ.state)
        .where(sa.or_(dead, _unowned(unowned_after)))
        .order_by(_ARQ.id).limit(limit)).all()
    return [tuple(row) for row in rows]


@session.retry_on_conflict
@main.writer
def take(context, uuid, old_owner, new_owner, unowned_after=None):
    """Compare-and-swap the owner of an ARQ's pending work.

    Only one of several conductors that found the same abandoned work
    changes the row; the others see no row changed. A row another
    transaction holds locked is passed over, not waited for.

    :param old_owner: the owner read by ``orphaned`` (None: no owner, then
        ``unowned_after`` must be given again).
    :returns: the ARQ's state once this conductor holds its work (it may
        have moved on since ``orphaned`` read it), else None.
    """
    if old_owner is None:
        where = _unowned(unowned_after)
    else:
        where = sa.and_(_ARQ.owner == old_owner, _PENDING)
    # NOTE(ownership): a conductor stopped (SIGSTOP, a hung host) inside a
    # transaction keeps its row locks until it runs again; waiting for
    # one would hold up the takeover of everything else it held, pass
    # after pass. Its row is taken on a later pass, once the lock is gone.
    row = context.session.execute(
        sa.select(_ARQ.id, _ARQ.state).where(_ARQ.uuid == uuid, where)
        .with_for_update(skip_locked=True)).first()
    if row is None:
        return None
    # NOTE(ownership): the condition again, for SQLite, which locks no row.
    taken = context.session.execute(
        sa.update(_ARQ).where(_ARQ.id == row.id, where)
        .values(owner=new_owner, taken_at=clock.utc_now(),
                updated_at=clock.utc_now())
        .execution_options(synchronize_session=False)).rowcount
    return row.state if taken else None


@session.retry_on_conflict
@main.writer
def claim(context, uuid, owner):
    """Take a bind no conductor holds (started by an older release);
    returns whether ``owner`` now holds it."""
    return bool(context.session.execute(
        sa.update(_ARQ).where(_ARQ.uuid == uuid, _ARQ.owner.is_(None),
                              _ARQ.state == states.ARQ_BIND_STARTED)
        .values(owner=owner, taken_at=clock.utc_now(),
                updated_at=clock.utc_now())
        .execution_options(synchronize_session=False)).rowcount)


def prepared(dep, handle, arq_uuid):
    """What an agent needs to undo a handle prepared for ARQ ``arq_uuid``;
    [] when the handle needs nothing on the host."""
    if handle.attach_type not in states.PREPARED_HANDLE_TYPES:
        return []
    return [{'host': dep.device.hostname,
             'driver_name': dep.driver_name or dep.device.driver_name,
             'type': handle.attach_type,
             'info': json.loads(handle.attach_info), 'uuid': handle.uuid,
             'arq': arq_uuid}]


@main.reader
def unbind_job(context, uuid, owner):
    """The handle an unbind held by ``owner`` must still release ([] if
    none)."""
    row = context.session.scalars(sa.select(_ARQ).where(
        _ARQ.uuid == uuid, _ARQ.state == states.ARQ_UNBOUND,
        _ARQ.owner == owner)).first()
    if row is None or row.attach_handle_id is None:
        return []
    handle = context.session.get(models.AttachHandle, row.attach_handle_id)
    return prepared(handle.deployable, handle, row.uuid)


@session.retry_on_conflict
@main.writer
def finish_unbind(context, uuids, owner):
    """Free the handles of unbound ARQs once their agents released them;
    those another conductor took over meanwhile are left to it."""
    rows = context.session.scalars(
        sa.select(_ARQ).where(_ARQ.uuid.in_(sorted(uuids)),
                              _ARQ.state == states.ARQ_UNBOUND,
                              _ARQ.owner == owner)
        .order_by(_ARQ.id).with_for_update()).all()
    for row in rows:
        if row.attach_handle_id is not None:
            context.session.execute(
                sa.update(models.AttachHandle)
                .where(models.AttachHandle.id == row.attach_handle_id)
                .values(in_use=False))
        row.attach_handle_id = row.owner = row.taken_at = None
        row.updated_at = clock.now(context.session)


@main.reader
def stalled(context, owner, older_than, limit=100):
    """Work ``owner`` took more than ``older_than`` seconds ago and still
    holds: a bind or unbind whose message or transaction was lost (a
    database or broker outage), or an event still to send.

    :returns: ``[(uuid, state)]``, oldest first.
    """
    rows = context.session.execute(
        sa.select(_ARQ.uuid, _ARQ.state)
        .where(_ARQ.owner == owner, _PENDING,
               _ARQ.taken_at < clock.utc_ago(older_than))
        .order_by(_ARQ.id).limit(limit)).all()
    return [tuple(row) for row in rows]


@main.reader
def resolved(context, uuids, owner):
    """``{uuid: (instance, state)}`` of the resolved binds ``owner``
    still has to tell Nova of."""
    if not uuids:
        return {}
    rows = context.session.execute(
        sa.select(_ARQ.uuid, _ARQ.instance_uuid, _ARQ.state)
        .where(_ARQ.uuid.in_(sorted(uuids)), _ARQ.owner == owner,
               _ARQ.state.in_(states.ARQ_BIND_ENDED))).all()
    return {uuid: (instance, state) for uuid, instance, state in rows}


@session.retry_on_conflict
@main.writer
def told(context, uuids, owner):
    """Nova has been sent the events of these resolved binds: ``owner``
    lets them go."""
    if not uuids:
        return
    context.session.execute(
        sa.update(_ARQ)
        .where(_ARQ.uuid.in_(sorted(uuids)), _ARQ.owner == owner,
               _ARQ.state.in_(states.ARQ_BIND_ENDED))
        .values(owner=None, taken_at=None, updated_at=clock.utc_now())
        .execution_options(synchronize_session=False))


@session.retry_on_conflict
@main.writer
def retry_later(context, uuids, owner):
    """Nova did not take these events: ``owner`` sends them again once
    ``[conductor] takeover_after`` has passed from now."""
    if not uuids:
        return
    context.session.execute(
        sa.update(_ARQ)
        .where(_ARQ.uuid.in_(sorted(uuids)), _ARQ.owner == owner,
               _ARQ.state.in_(states.ARQ_BIND_ENDED))
        .values(taken_at=clock.utc_now(), updated_at=clock.utc_now())
        .execution_options(synchronize_session=False))
