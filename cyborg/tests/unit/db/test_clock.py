"""The database server's UTC clock as SQL: on SQLite, compiled for others."""

import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql

from cyborg.db import clock
from cyborg.db import models
from cyborg.db import services
from cyborg.db.session import main
from cyborg.tests import skewed_clock


def _utc():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _read(db, *columns):
    with db.connect() as conn:
        return conn.execute(sa.select(*columns)).one()


def test_utc_now_is_python_utc_within_a_second(db):
    now, ago = _read(db, clock.utc_now(), clock.utc_ago(90.5))
    assert now.tzinfo is None
    assert abs((now - _utc()).total_seconds()) < 1
    assert (now - ago).total_seconds() == pytest.approx(90.5, abs=0.002)


def test_comparisons_in_sql_against_the_stored_text(db):
    # NOTE(tests): SQLite keeps datetimes as text; the expressions must
    # compare as the times do, across whole and fractional seconds.
    with db.begin() as conn:
        conn.execute(sa.insert(models.Service), [
            {'host': 'old', 'binary': 'b', 'report_count': 1,
             'disabled': False,
             'last_seen_up': _utc() - datetime.timedelta(seconds=61)},
            {'host': 'new', 'binary': 'b', 'report_count': 1,
             'disabled': False,
             'last_seen_up': _utc().replace(microsecond=0)}])
    with db.connect() as conn:
        live = conn.scalars(sa.select(models.Service.host).where(
            models.Service.last_seen_up >= clock.utc_ago(60))).all()
    assert live == ['new']


def test_now_is_read_once_per_transaction(db, ctx):
    @main.reader
    def twice(context):
        first = clock.now(context.session)
        return first, clock.now(context.session)

    first, second = twice(ctx)
    assert first == second
    assert abs((first - _utc()).total_seconds()) < 1
    assert twice(ctx)[0] >= first


@pytest.mark.parametrize('dialect, now, ago', [
    (mysql.dialect(), 'UTC_TIMESTAMP(6)',
     'TIMESTAMPADD(MICROSECOND, -CAST(%s * 1000000 AS SIGNED), '
     'UTC_TIMESTAMP(6))'),
    (postgresql.dialect(), "timezone('UTC', statement_timestamp())",
     "(timezone('UTC', statement_timestamp()) - %(param_1)s * "
     "INTERVAL '1 second')"),
])
def test_other_backends_ask_for_utc_whatever_the_session_zone(dialect, now,
                                                              ago):
    compiled = str(sa.select(clock.utc_now(), clock.utc_ago(5)).compile(
        dialect=dialect))
    assert now in compiled and ago in compiled


def test_heartbeats_go_by_the_database_clock(db, ctx, monkeypatch):
    skewed_clock.skew(monkeypatch, -3600)
    services.heartbeat(ctx, 'ctl-1', 'cyborg-conductor', clock_skew=-3600.0)
    services.agent_heartbeats(ctx, 'cyborg-conductor', {'ctl-1': None})
    services.record_reports(ctx, 'cyborg-agent', {
        'node1': (services.ABSENT, {'report_generation': 1})})
    with db.connect() as conn:
        rows = conn.execute(sa.select(
            models.Service.host, models.Service.last_seen_up,
            models.Service.clock_skew)).all()
    for host, seen, _skew in rows:
        assert abs((seen - _utc()).total_seconds()) < 2, host
    assert dict((host, value) for host, _seen, value in rows) == {
        'ctl-1': -3600.0, 'node1': None}
