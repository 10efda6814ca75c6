"""The database server's clock: the one time liveness is judged by."""

import datetime

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from cyborg.db.session import main

# NOTE(clock): conductors' clocks drift apart; one 120 s ahead once found
# every other conductor's heartbeat too old and took their live binds.
# Every timestamp a liveness or age judgement reads is written from the
# database server's clock, and every such judgement is made against it,
# in SQL (``utc_now``, ``utc_ago``) or with its time read once per
# transaction (``now``). Columns hold naive UTC datetimes.


class utc_now(expression.FunctionElement):  # noqa: N801 - an SQL function
    """The database server's current time in UTC, as a naive datetime."""

    type = sa.DateTime()
    name = 'utc_now'
    inherit_cache = True


class utc_ago(expression.FunctionElement):  # noqa: N801 - an SQL function
    """The database server's UTC time ``seconds`` ago."""

    type = sa.DateTime()
    name = 'utc_ago'
    inherit_cache = True

    def __init__(self, seconds):
        super().__init__(sa.literal(float(seconds), sa.Float()))


def _seconds(element, compiler, **kw):
    (seconds,) = element.clauses.clauses
    return compiler.process(seconds, **kw)


# NOTE(clock): SQLAlchemy stores SQLite datetimes as text with six digits
# of microseconds; strftime's %f gives milliseconds, padded to match, so
# that the text compares as the times do. 'now' is UTC there.
_SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f000', 'now'{})"


@compiler.compiles(utc_now)
def _now_default(element, compiler, **kw):
    return 'CURRENT_TIMESTAMP'


@compiler.compiles(utc_now, 'sqlite')
def _now_sqlite(element, compiler, **kw):
    return _SQLITE_NOW.format('')


@compiler.compiles(utc_now, 'mysql')
@compiler.compiles(utc_now, 'mariadb')
def _now_mysql(element, compiler, **kw):
    # NOTE(clock): NOW() and CURRENT_TIMESTAMP follow the session's time
    # zone; UTC_TIMESTAMP never does.
    return 'UTC_TIMESTAMP(6)'


@compiler.compiles(utc_now, 'postgresql')
def _now_postgresql(element, compiler, **kw):
    # NOTE(clock): now() is the start of the transaction, in the session's
    # time zone; the statement's start, turned into UTC, is what MariaDB's
    # UTC_TIMESTAMP() gives.
    return "timezone('UTC', statement_timestamp())"


@compiler.compiles(utc_ago)
def _ago_default(element, compiler, **kw):
    return '(%s - %s)' % (compiler.process(utc_now(), **kw),
                          _seconds(element, compiler, **kw))


@compiler.compiles(utc_ago, 'sqlite')
def _ago_sqlite(element, compiler, **kw):
    return _SQLITE_NOW.format(", '-' || %s || ' seconds'" % _seconds(
        element, compiler, **kw))


@compiler.compiles(utc_ago, 'mysql')
@compiler.compiles(utc_ago, 'mariadb')
def _ago_mysql(element, compiler, **kw):
    return 'TIMESTAMPADD(MICROSECOND, -CAST(%s * 1000000 AS SIGNED), %s)' % (
        _seconds(element, compiler, **kw), compiler.process(utc_now(), **kw))


@compiler.compiles(utc_ago, 'postgresql')
def _ago_postgresql(element, compiler, **kw):
    return "(%s - %s * INTERVAL '1 second')" % (
        compiler.process(utc_now(), **kw), _seconds(element, compiler, **kw))


_INFO_KEY = 'cyborg.clock.now'


def now(session):
    """The database server's UTC time, read once per transaction: the
    first call asks the database, later ones in the same session get
    the same value."""
    found = session.info.get(_INFO_KEY)
    if found is None:
        found = session.info[_INFO_KEY] = naive(
            session.scalar(sa.select(utc_now())))
    return found


def ago(session, seconds):
    """``now(session)`` less ``seconds``."""
    return now(session) - datetime.timedelta(seconds=seconds)


def naive(value):
    """A datetime from the database as a naive UTC one."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


@main.reader
def database_time(context):
    """The database server's UTC time now (a transaction of its own)."""
    return now(context.session)
