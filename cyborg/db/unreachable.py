"""Whether a database error means the database cannot be reached."""

import logging

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc
from sqlalchemy import pool as sa_pool

from cyborg import exception

# NOTE(db): what drivers say when the server went away mid-session or
# cannot be reached; oslo.db translates most of them to DBConnectionError,
# these catch the ones it leaves as a plain OperationalError or DBError.
_LOST_MARKERS = (
    "can't connect", 'lost connection', 'server has gone away',
    'connection refused', 'could not connect', 'server closed the '
    'connection', 'connection already closed', 'connection is closed',
    'terminating connection', 'connection reset', 'broken pipe',
    'no route to host', 'connection timed out', 'timeout expired',
    'connection to server', 'connection was killed',
)

# NOTE(db): PEP 249's names for the driver's own errors (pymysql's,
# psycopg2's), met where SQLAlchemy logs them unwrapped (a pool's reset).
_DBAPI_NAMES = ('OperationalError', 'InterfaceError')


def _causes(exc):
    """exc, then what it wraps or was raised from, each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = (getattr(exc, 'inner_exception', None) or
               getattr(exc, 'orig', None) or exc.__cause__ or
               exc.__context__)


def is_connection_error(exc):
    """Whether ``exc`` means the database cannot be reached at all."""
    for cause in _causes(exc):
        if isinstance(cause, (db_exc.DBConnectionError,
                              exception.DatabaseUnavailable)):
            return True
        if isinstance(cause, sa_exc.DBAPIError) and \
                cause.connection_invalidated:
            return True
        if isinstance(cause, (sa_exc.InterfaceError,
                              sa_exc.DisconnectionError)):
            return True
        if isinstance(cause, (sa_exc.OperationalError, db_exc.DBError)) \
                or type(cause).__name__ in _DBAPI_NAMES:
            text = str(cause).lower()
            if any(marker in text for marker in _LOST_MARKERS):
                return True
    return False


# NOTE(db): MySQL/MariaDB error codes of work the server could not do
# now, whatever the statement: too many connections (1040), shutting down
# (1053), a COMMIT or ROLLBACK Galera failed as its node left the primary
# component (1180, 1181), a lock wait timeout (1205), a deadlock (1213).
_TRANSIENT_MYSQL = frozenset((1040, 1053, 1180, 1181, 1205, 1213))
# NOTE(db): PostgreSQL's SQLSTATEs of the same: serialization failure,
# deadlock, lock not available, too many connections, shutting down.
_TRANSIENT_PG = frozenset(('40001', '40P01', '55P03', '53300', '57P01'))


def is_transient(exc):
    """Whether ``exc`` is a database failure the statement did not cause,
    so that the same request may succeed later: the database cannot be
    reached, or could not do the work now (a Galera node that left the
    primary component, a lock wait timeout, a deadlock that outlasted the
    writer's retries)."""
    if is_connection_error(exc):
        return True
    for cause in _causes(exc):
        if isinstance(cause, db_exc.DBDeadlock):
            return True
        code = cause.args[0] if getattr(cause, 'args', None) else None
        if type(cause).__name__ in _DBAPI_NAMES and \
                isinstance(code, int) and code in _TRANSIENT_MYSQL:
            return True
        if getattr(cause, 'pgcode', None) in _TRANSIENT_PG:
            return True
        if isinstance(cause, sa_exc.OperationalError) and \
                'database is locked' in str(cause):
            return True
    return False


def reason(exc):
    """The first line of what the driver said, for the log."""
    for cause in _causes(exc):
        text = str(cause).strip()
        if text and not isinstance(cause, exception.DatabaseUnavailable):
            return text.splitlines()[0][:200]
    return type(exc).__name__


def _pool_classes(cls=sa_pool.Pool):
    yield cls
    for sub in cls.__subclasses__():
        yield from _pool_classes(sub)


def pool_loggers():
    """The loggers SQLAlchemy's connection pools write to."""
    # NOTE(db): a logger's filters see only its own records, and a pool
    # logs to its class's logger (SQLAlchemy's instance_logger).
    return [logging.getLogger('%s.%s' % (cls.__module__, cls.__name__))
            for cls in _pool_classes()]
