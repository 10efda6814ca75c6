"""Database outages in the conductor: translation, logging, the tracker."""

import logging
import sys
import threading

from oslo_db import exception as db_exc
import oslo_messaging as messaging
import pytest
import sqlalchemy
from sqlalchemy import exc as sa_exc
from sqlalchemy import pool as sa_pool

from cyborg import exception
from cyborg.conductor import outage


class _Log:
    def __init__(self):
        self.records = []
        self._lock = threading.Lock()

    def error(self, msg, *args):
        with self._lock:
            self.records.append((logging.ERROR, msg % args))

    def info(self, msg, *args):
        with self._lock:
            self.records.append((logging.INFO, msg % args))


def _lost():
    return sa_exc.OperationalError(
        'SELECT 1', {}, Exception("(2013, 'Lost connection to MySQL server "
                                  "during query')"))


@pytest.mark.parametrize('exc', [
    db_exc.DBConnectionError('refused'),
    db_exc.DBError(_lost()),
    _lost(),
    sa_exc.InterfaceError('SELECT 1', {}, Exception('connection already '
                                                    'closed')),
    sa_exc.OperationalError('x', {}, Exception('x'),
                            connection_invalidated=True),
    exception.DatabaseUnavailable(reason='x'),
])
def test_connection_errors_are_recognised(exc):
    assert outage.is_connection_error(exc)


def test_a_cause_is_followed():
    try:
        try:
            raise _lost()
        except sa_exc.OperationalError as inner:
            raise RuntimeError('wrapped') from inner
    except RuntimeError as exc:
        assert outage.is_connection_error(exc)


@pytest.mark.parametrize('exc', [
    db_exc.DBDuplicateEntry(),
    db_exc.DBDeadlock(),
    sa_exc.OperationalError('x', {}, Exception('database is locked')),
    sa_exc.IntegrityError('x', {}, Exception('UNIQUE constraint')),
    exception.DeviceNotFound(uuid='u'),
    ValueError('connection refused? no, a bug'),
])
def test_other_errors_are_not(exc):
    assert not outage.is_connection_error(exc)


class OperationalError(Exception):
    """Named as PEP 249 names a driver's error (pymysql's, psycopg2's)."""


class _PgError(Exception):
    """A psycopg2 error: its SQLSTATE is ``pgcode``."""

    def __init__(self, pgcode):
        super().__init__('pg')
        self.pgcode = pgcode


def _galera_commit():
    # What MariaDB answers a COMMIT on a node that left the primary
    # component (a Galera cluster losing quorum or restarting).
    return sa_exc.OperationalError('COMMIT', {}, OperationalError(
        1180, 'Got error 6 "No such device or address" during COMMIT'))


@pytest.mark.parametrize('exc', [
    _galera_commit(),
    db_exc.DBError(_galera_commit()),
    sa_exc.OperationalError('x', {}, OperationalError(
        1205, 'Lock wait timeout exceeded; try restarting transaction')),
    db_exc.DBDeadlock(),
    sa_exc.OperationalError('x', {}, _PgError('40001')),
    sa_exc.OperationalError('x', {}, Exception('database is locked')),
    _lost(),
])
def test_transient_errors_are_recognised(exc):
    assert outage.unreachable.is_transient(exc)


@pytest.mark.parametrize('exc', [
    # MySQL reports an unknown column as an OperationalError: a bug.
    sa_exc.OperationalError('x', {}, OperationalError(
        1054, "Unknown column 'x' in 'field list'")),
    sa_exc.OperationalError('x', {}, Exception('no such table: arqs')),
    sa_exc.ProgrammingError('x', {}, _PgError('42P01')),
    db_exc.DBDuplicateEntry(),
    ValueError('a bug'),
    # whatever a cause carries first (here unhashable) is no error code
    KeyError({'not': 'hashable'}),
    OperationalError(['a', 'list']),
])
def test_bugs_are_not_transient(exc):
    assert not outage.unreachable.is_transient(exc)


def test_a_galera_commit_failure_is_a_503_not_an_outage():
    log = _Log()
    tracker = outage.OutageTracker(log)

    def commit(context):
        raise db_exc.DBError(_galera_commit())

    with pytest.raises(messaging.ExpectedException) as caught:
        outage.guard(commit, tracker)(None)
    failure = caught.value.exc_info[1]
    assert isinstance(failure, exception.DatabaseUnavailable)
    assert 'retry later' in failure.message
    # The database answered: it is not down.
    assert not tracker.down and log.records == []


def test_tracker_logs_each_edge_once_with_the_count():
    log = _Log()
    tracker = outage.OutageTracker(log)
    tracker.succeeded()
    assert log.records == []
    for _ in range(5):
        tracker.failed(_lost())
    tracker.failed(_lost(), request=False)
    assert [level for level, _ in log.records] == [logging.ERROR]
    assert 'Lost connection' in log.records[0][1]
    tracker.succeeded()
    tracker.succeeded()
    assert log.records[1] == (logging.INFO, 'The database is available '
                              'again; 5 requests were refused while it '
                              'was not.')
    tracker.failed(_lost())
    tracker.succeeded()
    assert len(log.records) == 4
    assert '; 1 requests were refused' in log.records[3][1]


def test_tracker_under_concurrency():
    log = _Log()
    tracker = outage.OutageTracker(log)
    start = threading.Barrier(16)

    def worker():
        start.wait()
        for _ in range(500):
            tracker.failed(_lost())

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ends = threading.Barrier(16)

    def ender():
        ends.wait()
        tracker.succeeded()

    threads = [threading.Thread(target=ender) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [level for level, _ in log.records] == [logging.ERROR,
                                                   logging.INFO]
    assert '8000 requests were refused' in log.records[1][1]


class _Manager:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.down = True

    @messaging.expected_exceptions(exception.CyborgException)
    def get_thing(self, context):
        if self.down:
            raise db_exc.DBConnectionError(
                "(pymysql.err.OperationalError) (2003, \"Can't connect to "
                "MySQL server on '10.0.0.9'\")")
        return 'thing'

    def broken(self, context):
        raise ValueError('a bug')

    def periodic_tasks(self):
        return [(10, self.heartbeat)]

    def heartbeat(self):
        if self.down:
            raise db_exc.DBConnectionError('refused')
        return 3


def test_endpoint_makes_an_expected_database_unavailable():
    log = _Log()
    manager = _Manager()
    endpoint = outage.GuardedEndpoint(manager, outage.OutageTracker(log))
    assert endpoint.target is manager.target
    for _ in range(3):
        with pytest.raises(messaging.ExpectedException) as caught:
            endpoint.get_thing(None)
        failure = caught.value.exc_info[1]
        assert isinstance(failure, exception.DatabaseUnavailable)
        # the client is not told the database's address
        assert '10.0.0.9' not in failure.message
        assert failure.message.startswith('The database is unavailable')
    with pytest.raises(ValueError):
        endpoint.broken(None)
    manager.down = False
    assert endpoint.get_thing(None) == 'thing'
    assert log.records[0][0] == logging.ERROR
    assert '10.0.0.9' in log.records[0][1]
    assert log.records[1] == (logging.INFO, 'The database is available '
                              'again; 3 requests were refused while it '
                              'was not.')
    assert len(log.records) == 2


def test_periodic_tasks_are_quiet_and_end_an_outage():
    log = _Log()
    manager = _Manager()
    endpoint = outage.GuardedEndpoint(manager, outage.OutageTracker(log))
    ((interval, task),) = endpoint.periodic_tasks()
    assert interval == 10
    assert task() is None
    assert task() is None
    manager.down = False
    assert task() == 3
    assert [level for level, _ in log.records] == [logging.ERROR,
                                                   logging.INFO]
    assert '; 0 requests were refused' in log.records[1][1]



def _raised(exc):
    try:
        raise exc
    except Exception:
        return sys.exc_info()


def test_a_pool_reset_on_a_lost_connection_is_the_outage(caplog):
    log = _Log()
    tracker = outage.OutageTracker(log)
    outage.quiet_pool_resets(tracker)
    try:
        engine = sqlalchemy.create_engine('sqlite://',
                                          poolclass=sa_pool.QueuePool)
        with caplog.at_level(logging.ERROR):
            engine.pool.logger.error(
                'Exception during reset or similar', exc_info=_raised(
                    OperationalError(2013, 'Lost connection to MySQL '
                                           'server during query')))
            engine.pool.logger.error('Exception during reset or similar',
                                     exc_info=_raised(ValueError('a bug')))
    finally:
        outage.quiet_pool_resets()
    assert [r.exc_info[0] for r in caplog.records] == [ValueError]
    assert tracker.down and tracker.refused == 0
    assert [level for level, _ in log.records] == [logging.ERROR]
