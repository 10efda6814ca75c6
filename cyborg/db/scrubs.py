"""Deployables scrubbed between tenants: marked, claimed, finished."""

import json

import sqlalchemy as sa

from cyborg import states
from cyborg.db import clock
from cyborg.db import device_health
from cyborg.db import models
from cyborg.db import services as service_queries
from cyborg.db import session as db_session
from cyborg.db.session import main


def _now(session):
    # NOTE(scrubs): whole seconds, as MySQL's DATETIME keeps them: a claim
    # is compared with what was stored.
    return clock.now(session).replace(microsecond=0)


def mark(session, deployable_ids):
    """Mark cleaning, in the caller's transaction, each of these
    deployables that nothing is bound to any more and whose host's agent
    scrubs for its driver; binds refuse it from the commit on.

    :returns: the ids marked.
    """
    ids = sorted({i for i in deployable_ids if i is not None})
    if not ids:
        return []
    session.flush()
    dep, dev, svc = models.Deployable, models.Device, models.Service
    arq = models.AcceleratorRequest
    busy = sa.select(arq.deployable_id).where(
        arq.deployable_id.in_(ids), arq.state.in_(states.ARQ_HOLDS_DEVICE))
    rows = session.execute(
        sa.select(dep.id, dev.driver_name, svc.scrubbing_drivers)
        .join(dev, dep.device_id == dev.id)
        .join(svc, sa.and_(svc.host == dev.hostname,
                           svc.binary == service_queries.AGENT_BINARY))
        .where(dep.id.in_(ids), dep.cleaning_since.is_(None),
               dep.id.not_in(busy))).all()
    marked = [row.id for row in rows
              if row.driver_name in json.loads(row.scrubbing_drivers or '[]')]
    if marked:
        session.execute(sa.update(dep).where(dep.id.in_(marked))
                        .values(cleaning_since=_now(session),
                                scrub_owner=None))
    return marked


@db_session.retry_on_conflict
@main.writer
def claim(context, owner, stale_after):
    """Take the scrubs no conductor runs, and those of a conductor that
    has held one for over ``stale_after`` seconds (it stopped).

    :returns: one job per deployable: its ``id``, ``uuid``, ``name``,
        ``since`` (cleaning_since), ``device_uuid``, ``host``,
        ``driver_name``, ``cpid_type`` and ``cpid_info``.
    """
    dep, dev, cpid = models.Deployable, models.Device, models.ControlpathID
    cutoff = clock.utc_ago(stale_after)
    rows = context.session.execute(
        sa.select(dep.id, dep.uuid, dep.name, dep.cleaning_since,
                  dep.scrub_owner, dev.uuid.label('device_uuid'),
                  dev.hostname, dev.driver_name, cpid.cpid_type,
                  cpid.cpid_info)
        .join(dev, dep.device_id == dev.id)
        .join(cpid, cpid.device_id == dev.id)
        .where(dep.cleaning_since.is_not(None),
               sa.or_(dep.scrub_owner.is_(None),
                      dep.cleaning_since < cutoff))
        .order_by(dep.id)).all()
    jobs = []
    for row in rows:
        # NOTE(scrubs): a stale claim restarts the clock, so that one
        # conductor, not every one, takes it over.
        at = _now(context.session)
        taken = context.session.execute(
            sa.update(dep)
            .where(dep.id == row.id,
                   dep.cleaning_since == row.cleaning_since,
                   dep.scrub_owner.is_(None) if row.scrub_owner is None
                   else dep.scrub_owner == row.scrub_owner)
            .values(scrub_owner=owner, cleaning_since=at)).rowcount
        if taken:
            jobs.append({'id': row.id, 'uuid': row.uuid, 'name': row.name,
                         'since': at, 'device_uuid': row.device_uuid,
                         'host': row.hostname,
                         'driver_name': row.driver_name,
                         'cpid_type': row.cpid_type,
                         'cpid_info': json.loads(row.cpid_info)})
    return jobs


@db_session.retry_on_conflict
@main.writer
def finish(context, job):
    """The scrub of ``job`` is done: the deployable takes binds again.

    :returns: False when another conductor took the job meanwhile.
    """
    dep = models.Deployable
    return bool(context.session.execute(
        sa.update(dep)
        .where(dep.id == job['id'], dep.cleaning_since == job['since'])
        .values(cleaning_since=None, scrub_owner=None)).rowcount)


@db_session.retry_on_conflict
@main.writer
def put_back(context, job):
    """Let go of ``job`` unrun (its device was claimed): the next
    conductor's pass takes it.

    :returns: False when another conductor took the job meanwhile.
    """
    dep = models.Deployable
    return bool(context.session.execute(
        sa.update(dep)
        .where(dep.id == job['id'], dep.cleaning_since == job['since'])
        .values(scrub_owner=None)).rowcount)


@db_session.retry_on_conflict
@main.writer
def fail(context, job, reason):
    """The scrub of ``job`` failed: its device is held in error as failed,
    until an operator enables it.

    :returns: a ``device_health.Change``, or None when another conductor
        took the job meanwhile.
    """
    if not finish(context, job):
        return None
    device = context.session.scalars(
        sa.select(models.Device).where(models.Device.uuid ==
                                       job['device_uuid'])
        .with_for_update()).first()
    if device is None:
        return None
    old_health, old_status = device.health, device.status
    reason = (states.SCRUB_FAILED + reason)[:255]
    device.health, device.health_reason = states.HEALTH_FAILED, reason
    device.health_since = _now(context.session)
    device_health.hold(device, reason)
    device.updated_at = clock.now(context.session)
    return device_health.Change(device.uuid, device.hostname, old_health,
                                device.health, reason, old_status,
                                device.status)
