"""Queries on service liveness records (one row per host and binary)."""

import json

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main

#: The binary agents record their liveness and reports under.
AGENT_BINARY = 'cyborg-agent'


def _upsert(context, host, binary, values):
    """UPDATE the row of (host, binary), or INSERT it the first time.

    Two first records of one service at once make one INSERT fail on the
    unique key; ``_first_record_race`` runs that transaction again, and
    then it finds the row to update. First records of two services at once
    may deadlock on InnoDB's gap locks (each UPDATE that found no row locks
    the gap the other INSERTs into); the transaction is run again too.
    """
    values = dict(values, last_seen_up=clock.utc_now(),
                  updated_at=clock.utc_now(),
                  report_count=models.Service.report_count + 1)
    count = context.session.execute(
        sa.update(models.Service)
        .where(models.Service.host == host, models.Service.binary == binary)
        .values(**values)).rowcount
    if count:
        return
    insert = {k: v for k, v in values.items()
              if k not in ('report_count', 'updated_at')}
    context.session.execute(sa.insert(models.Service).values(
        **insert, host=host, binary=binary, report_count=1))


# NOTE(services): not a savepoint around the INSERT: MariaDB ends the whole
# transaction on some errors, and rolling back to the savepoint then fails.
_first_record_race = session.retrying(db_exc.DBDuplicateEntry)


@_first_record_race
@main.writer
def heartbeat(context, host, binary, topic=None, version=None,
              rpc_version=None, clock_skew=None):
    """Record that a service is alive: one UPDATE (an INSERT the first time
    that host and binary report).

    :param clock_skew: seconds the service's clock is ahead of the
        database's (negative: behind), as it measured them.
    """
    values = {name: value for name, value in (
        ('topic', topic), ('version', version), ('rpc_version', rpc_version),
        ('clock_skew', clock_skew)) if value is not None}
    _upsert(context, host, binary, values)


#: The generation of an agent no row records yet.
ABSENT = object()


def _at_generation(generations):
    """Rows whose report generation is the one given for their host."""
    known = [(host, gen) for host, gen in generations.items()
             if gen is not None]
    unset = [host for host, gen in generations.items() if gen is None]
    clauses = []
    if known:
        clauses.append(sa.tuple_(models.Service.host,
                                 models.Service.report_generation)
                       .in_(sorted(known)))
    if unset:
        clauses.append(sa.and_(models.Service.host.in_(sorted(unset)),
                               models.Service.report_generation.is_(None)))
    return sa.or_(*clauses)


@main.reader
def agent_generations(context, binary, hosts):
    """``{host: stored report generation}`` of the hosts that have a row
    (the generation may be None): one SELECT."""
    if not hosts:
        return {}
    return dict(context.session.execute(
        sa.select(models.Service.host, models.Service.report_generation)
        .where(models.Service.binary == binary,
               models.Service.host.in_(sorted(hosts)))).all())


# NOTE(services): conductors record batches of agents at once; on MariaDB
# two batches can deadlock on the rows they share, and the loser runs
# again.
@session.retry_on_conflict
@main.writer
def agent_heartbeats(context, binary, generations):
    """Liveness of many agents whose inventory did not change.

    One UPDATE records every agent whose stored generation is the one it
    sent; only when some are not does one SELECT tell which.

    :param generations: ``{host: generation the agent last had applied}``
    :returns: ``{host: whether the stored inventory is at that
        generation}``; an agent answered False must send its whole
        inventory, and nothing was written for it.
    """
    if not generations:
        return {}
    count = context.session.execute(
        sa.update(models.Service)
        .where(models.Service.binary == binary,
               _at_generation(generations))
        .values(last_seen_up=clock.utc_now(), updated_at=clock.utc_now(),
                report_count=models.Service.report_count + 1)
        .execution_options(synchronize_session=False)).rowcount
    if count == len(generations):
        return dict.fromkeys(generations, True)
    stored = agent_generations(context, binary, sorted(generations))
    return {host: host in stored and stored[host] == generation
            for host, generation in generations.items()}


_JSON_VALUES = ('drivers', 'available_drivers', 'scrubbing_drivers')


def _stored_values(values):
    stored = dict(values)
    if stored.get('drivers') is not None:
        stored['drivers'] = sorted(stored['drivers'])
    for name in _JSON_VALUES:
        if stored.get(name) is not None:
            stored[name] = json.dumps(stored[name])
    return stored


@session.retry_on_conflict
@main.writer
def record_reports(context, binary, reports):
    """Record the generations of many agents' inventories with their
    liveness: one UPDATE for the agents that have a row, one INSERT for the
    others.

    Runs in the transaction that applies the inventories.

    :param reports: ``{host: (generation read earlier in this transaction,
        or ABSENT when there was no row; {column: value})}``
    :returns: False when a row no longer held the generation read (another
        conductor recorded that host meanwhile); the caller rolls back.
    """
    known = {host: read for host, (read, _values) in reports.items()
             if read is not ABSENT}
    if known:
        values = {host: _stored_values(reports[host][1]) for host in known}
        columns = sorted({name for row in values.values() for name in row})
        assignments = {'last_seen_up': clock.utc_now(),
                       'updated_at': clock.utc_now(),
                       'report_count': models.Service.report_count + 1}
        for name in columns:
            column = getattr(models.Service, name)
            whens = {host: row[name] for host, row in values.items()
                     if name in row}
            assignments[name] = sa.case(whens, value=models.Service.host,
                                        else_=column)
        count = context.session.execute(
            sa.update(models.Service)
            .where(models.Service.binary == binary, _at_generation(known))
            .values(**assignments)
            .execution_options(synchronize_session=False)).rowcount
        if count != len(known):
            return False
    new = [dict(_stored_values(values), host=host, binary=binary,
                report_count=1)
           for host, (read, values) in sorted(reports.items())
           if read is ABSENT]
    if new:
        context.session.execute(sa.insert(models.Service).values(
            last_seen_up=clock.utc_now()), new)
    return True


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


@main.reader
def read(context, binary=None, host=None):
    """``(the database's UTC time, rows)``: the services of ``binary`` (of
    ``host`` too when given), and the time to judge their liveness by."""
    stmt = sa.select(models.Service).order_by(models.Service.id)
    if binary is not None:
        stmt = stmt.where(models.Service.binary == binary)
    if host is not None:
        stmt = stmt.where(models.Service.host == host)
    return clock.now(context.session), context.session.scalars(stmt).all()


@_first_record_race
@main.writer
def record_drivers(context, host, binary, drivers, available_drivers):
    """Record an agent's drivers after an operator changed them."""
    _upsert(context, host, binary, {
        'drivers': json.dumps(sorted(drivers)),
        'available_drivers': json.dumps(available_drivers)})
