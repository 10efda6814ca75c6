"""Database outages: recognise them, refuse requests quietly, log edges."""

import functools
import logging as py_logging
import threading

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import exception
from cyborg.db import unreachable

LOG = logging.getLogger(__name__)

is_connection_error = unreachable.is_connection_error
_reason = unreachable.reason


class OutageTracker:
    """One ERROR when the database goes away, one INFO when it is back.

    Thread-safe: RPC workers report failures and successes concurrently;
    exactly one of them logs each edge.
    """

    def __init__(self, logger=None):
        self._lock = threading.Lock()
        self._log = logger or LOG
        self.down = False
        self.refused = 0

    def failed(self, exc, request=True):
        """The database could not be reached; ``request``: one refused."""
        with self._lock:
            if request:
                self.refused += 1
            if self.down:
                return
            self.down = True
        self._log.error('The database is unavailable (%s); requests are '
                        'refused with 503 until it is back.', _reason(exc))

    def succeeded(self):
        """A database operation worked."""
        # NOTE(outage): read without the lock first: this runs after every
        # request and is almost always a no-op.
        if not self.down:
            return
        with self._lock:
            if not self.down:
                return
            self.down = False
            refused, self.refused = self.refused, 0
        self._log.info('The database is available again; %d requests were '
                       'refused while it was not.', refused)


#: The conductor process's tracker.
TRACKER = OutageTracker()


class PoolResetFilter(py_logging.Filter):
    """Drops SQLAlchemy's traceback for a connection that the database
    dropped, counting it as the outage it is instead."""

    def __init__(self, tracker=None):
        super().__init__()
        self._tracker = tracker

    def filter(self, record):
        failure = record.exc_info[1] if record.exc_info else None
        if failure is None or not is_connection_error(failure):
            return True
        (self._tracker or TRACKER).failed(failure, request=False)
        return False


def quiet_pool_resets(tracker=None):
    """Have every connection pool's logger leave a lost connection to the
    tracker: when the database goes away, a pool that returns a checked-out
    connection fails to roll it back and would log a traceback for each."""
    found = PoolResetFilter(tracker)
    for logger in unreachable.pool_loggers():
        for old in [f for f in logger.filters
                    if isinstance(f, PoolResetFilter)]:
            logger.removeFilter(old)
        logger.addFilter(found)
    return found


def guard(func, tracker=None):
    """``func`` (an RPC endpoint) with database outages made an expected
    DatabaseUnavailable: the caller gets a 503, the log no traceback."""

    @functools.wraps(func)
    def guarded(*args, **kwargs):
        found = tracker or TRACKER
        try:
            result = func(*args, **kwargs)
        except messaging.ExpectedException as expected:
            failure = expected.exc_info[1]
            if isinstance(failure, exception.DatabaseUnavailable):
                found.failed(failure)
            raise
        except Exception as exc:
            if is_connection_error(exc):
                found.failed(exc)
                why = 'the conductor cannot reach it; retry later'
            elif unreachable.is_transient(exc):
                # NOTE(outage): the database answered but could not do
                # the work now (a Galera node recovering its state);
                # the request is sound, so the caller retries (503),
                # and a reachable database is not counted as down.
                LOG.warning('The database could not do %s now: %s',
                            func.__name__, _reason(exc))
                why = 'it could not do the work now; retry later'
            else:
                raise
            try:
                # NOTE(outage): the driver's words (hosts, ports) are in
                # the log once; the client learns only what to do.
                raise exception.DatabaseUnavailable(reason=why) from None
            except exception.DatabaseUnavailable:
                # NOTE(outage): the dispatcher logs an ExpectedException at
                # debug level and sends the wrapped one to the caller.
                raise messaging.ExpectedException() from None
        found.succeeded()
        return result
    return guarded


def quiet(task, tracker=None):
    """A periodic ``task`` that skips its run while the database is down,
    with no traceback; it refuses no request, so none is counted."""

    @functools.wraps(task)
    def run():
        found = tracker or TRACKER
        try:
            result = task()
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            found.failed(exc, request=False)
            return None
        found.succeeded()
        return result
    return run


class GuardedEndpoint:
    """An RPC endpoint whose public methods are guard()ed.

    The dispatcher finds methods and the ``target`` by attribute, so the
    manager itself stays a plain object its own code calls directly.
    """

    def __init__(self, endpoint, tracker=None):
        self._endpoint = endpoint
        self._tracker = tracker
        self.target = endpoint.target

    def periodic_tasks(self):
        """The manager's periodic tasks, quiet during an outage."""
        tasks = getattr(self._endpoint, 'periodic_tasks', list)()
        return [(interval, quiet(task, self._tracker))
                for interval, task in tasks]

    def __getattr__(self, name):
        found = getattr(self._endpoint, name)
        if name.startswith('_') or not callable(found):
            return found
        return guard(found, self._tracker)
