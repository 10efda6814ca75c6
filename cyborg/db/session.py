"""The one enginefacade transaction context of the conductor's database."""

import functools
import inspect

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from sqlalchemy import event as sa_event
from sqlalchemy import exc as sa_exc

# NOTE(db): enginefacade reads [database] from cfg.CONF when it first starts;
# SQLite ignores foreign keys (and so ON DELETE CASCADE) unless asked.
main = enginefacade.transaction_context()
main.configure(sqlite_fk=True)


def _read_committed(engine):
    """MariaDB and MySQL sessions at READ COMMITTED, PostgreSQL's default.

    Under their REPEATABLE READ, a locking read of ARQs by instance also
    locks the gaps beside the rows it finds; a conductor stopped (SIGSTOP,
    swapped out) inside such a transaction then holds the binds and
    deletes of unrelated instances for innodb_lock_wait_timeout (50 s).
    At READ COMMITTED only the rows themselves are locked. Every
    transaction here takes its locks explicitly or updates conditionally,
    as it must on PostgreSQL, so nothing relies on the wider snapshot.
    """
    if engine.dialect.name != 'mysql':
        return

    @sa_event.listens_for(engine, 'connect')
    def _connected(dbapi_connection, connection_record):
        with dbapi_connection.cursor() as cursor:
            cursor.execute('SET SESSION TRANSACTION ISOLATION LEVEL READ '
                           'COMMITTED')

    # NOTE(db): oslo.db tried a connection before this hook ran; the pool
    # must not hand that one out at the old level.
    engine.dispose()


main.append_on_engine_create(_read_committed)

#: The attribute ``retrying`` sets on the function it returns, naming
#: that function itself (a decorator above it would copy the attribute,
#: not be named by it); the test that every writer retries looks for it.
RETRIES = '_cyborg_retries_conflicts'


def get_engine():
    return main.writer.get_engine()


def _is_busy(exc):
    # NOTE(db): SQLite answers "database is locked" where MariaDB and
    # PostgreSQL report a deadlock; both mean: run the transaction again.
    return isinstance(exc, sa_exc.OperationalError) and \
        'database is locked' in str(exc)


def in_transaction(context):
    """Whether ``context`` is inside an enginefacade transaction already."""
    try:
        return context.transaction_ctx is not None
    except (db_exc.NoEngineContextEstablished, AttributeError):
        return False


def _context_of(func):
    """Where ``func`` (as enginefacade reads it) takes its context: the
    first argument, or the second of a method."""
    names = list(inspect.signature(func).parameters)
    index = 1 if names and names[0] in ('self', 'cls') else 0
    name = names[index]

    def find(args, kwargs):
        return kwargs[name] if name in kwargs else args[index]
    return find


def retrying(*also):
    """A decorator that runs a whole writer transaction again when the
    database says another one got in its way: a deadlock (InnoDB's, or a
    Galera certification failure, which MariaDB reports as one), a lock
    wait timeout, a busy SQLite file, or any of the exceptions ``also``.

    Put it above ``@main.writer``, so that each attempt is a transaction
    of its own. A call made inside a transaction the caller opened is
    run once: the conflict has ended that whole transaction, which only
    its outermost function can run again.
    """
    retry = oslo_db_api.wrap_db_retry(
        max_retries=10, retry_interval=0.02, inc_retry_interval=True,
        max_retry_interval=0.5, retry_on_deadlock=True,
        exception_checker=lambda exc: (_is_busy(exc) or
                                       isinstance(exc, also)))

    def decorate(func):
        retried = retry(func)
        context_of = _context_of(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if in_transaction(context_of(args, kwargs)):
                return func(*args, **kwargs)
            return retried(*args, **kwargs)

        setattr(wrapper, RETRIES, wrapper)
        return wrapper
    return decorate


#: Runs a whole writer transaction again when the database says another
#: one got in its way (deadlock, certification failure, lock timeout, a
#: busy SQLite file).
retry_on_conflict = retrying()
