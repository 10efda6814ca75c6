"""Queries on service liveness records (one row per host and binary)."""

import datetime
import json

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import models
from cyborg.db.session import main


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _upsert(context, host, binary, values, extra_where=()):
    """UPDATE the row of (host, binary), or INSERT it the first time.

    :returns: False when ``extra_where`` matched no existing row.
    """
    now = _now()
    values = dict(values, last_seen_up=now, updated_at=now,
                  report_count=models.Service.report_count + 1)
    count = context.session.execute(
        sa.update(models.Service)
        .where(models.Service.host == host, models.Service.binary == binary,
               *extra_where)
        .values(**values)).rowcount
    if count:
        return True
    if extra_where:
        return False
    insert = {k: v for k, v in values.items()
              if k not in ('report_count', 'updated_at')}
    try:
        with context.session.begin_nested():
            context.session.add(models.Service(
                host=host, binary=binary, report_count=1, **insert))
    except db_exc.DBDuplicateEntry:
        # NOTE(services): a concurrent first record of the same service won
        # the insert; ours is the update it would have been.
        context.session.execute(
            sa.update(models.Service)
            .where(models.Service.host == host,
                   models.Service.binary == binary)
            .values(**values))
    return True


@main.writer
def heartbeat(context, host, binary, topic=None, version=None):
    """Record that a service is alive: one UPDATE (an INSERT the first time
    that host and binary report)."""
    values = {}
    if topic is not None:
        values['topic'] = topic
    if version is not None:
        values['version'] = version
    _upsert(context, host, binary, values)


@main.writer
def agent_heartbeat(context, host, binary, generation):
    """Liveness of an agent whose inventory did not change: one UPDATE.

    :returns: whether the stored inventory is at ``generation``; when it is
        not (or the agent is unknown), nothing is written and the agent must
        send its whole inventory.
    """
    return _upsert(context, host, binary, {}, extra_where=(
        models.Service.report_generation == generation,))


@main.writer
def record_report(context, host, binary, generation, base_generation=None,
                  version=None, drivers=None, report_interval=None,
                  available_drivers=None):
    """Record the generation of an agent's inventory with its liveness.

    Runs in the transaction that applies the inventory. A delta
    (``base_generation`` given) applies only on top of the generation it was
    computed from; otherwise ``GenerationConflict`` rolls everything back
    and the agent sends its whole inventory.
    """
    values = {'report_generation': generation}
    if version is not None:
        values['version'] = version
    if drivers is not None:
        values['drivers'] = json.dumps(sorted(drivers))
    if available_drivers is not None:
        values['available_drivers'] = json.dumps(available_drivers)
    if report_interval is not None:
        values['report_interval'] = report_interval
    if base_generation is None:
        _upsert(context, host, binary, values)
        return
    where = (models.Service.report_generation == base_generation,)
    if not _upsert(context, host, binary, values, extra_where=where):
        raise exception.GenerationConflict(host=host,
                                           generation=base_generation)


@main.reader
def get(context, host, binary):
    row = context.session.scalars(
        sa.select(models.Service).where(models.Service.host == host,
                                        models.Service.binary == binary)
    ).first()
    if row is None:
        raise exception.ServiceNotFound(host=host, binary=binary)
    return row


@main.reader
def list(context, binary=None):  # noqa: A001 - mirrors the object API
    stmt = sa.select(models.Service).order_by(models.Service.id)
    if binary is not None:
        stmt = stmt.where(models.Service.binary == binary)
    return context.session.scalars(stmt).all()


@main.writer
def record_drivers(context, host, binary, drivers, available_drivers):
    """Record an agent's drivers after an operator changed them."""
    _upsert(context, host, binary, {
        'drivers': json.dumps(sorted(drivers)),
        'available_drivers': json.dumps(available_drivers)})
