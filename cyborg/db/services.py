"""Queries on service liveness records (one row per host and binary)."""

import datetime

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import models
from cyborg.db.session import main


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


@main.writer
def heartbeat(context, host, binary, topic=None, version=None):
    """Record that a service is alive: one UPDATE, or an INSERT the first
    time that host and binary report."""
    now = _now()
    values = {'last_seen_up': now, 'updated_at': now,
              'report_count': models.Service.report_count + 1}
    if topic is not None:
        values['topic'] = topic
    if version is not None:
        values['version'] = version
    count = context.session.execute(
        sa.update(models.Service)
        .where(models.Service.host == host, models.Service.binary == binary)
        .values(**values)).rowcount
    if count:
        return
    try:
        with context.session.begin_nested():
            context.session.add(models.Service(
                host=host, binary=binary, topic=topic, version=version,
                report_count=1, last_seen_up=now))
    except db_exc.DBDuplicateEntry:
        # NOTE(services): a concurrent first heartbeat of the same service
        # won the insert; ours is the update it would have been.
        context.session.execute(
            sa.update(models.Service)
            .where(models.Service.host == host,
                   models.Service.binary == binary)
            .values(**values))


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
