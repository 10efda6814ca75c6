"""The one enginefacade transaction context of the conductor's database."""

import functools
import inspect

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from sqlalchemy import exc as sa_exc

# NOTE(db): enginefacade reads [database] from cfg.CONF when it first starts;
# SQLite ignores foreign keys (and so ON DELETE CASCADE) unless asked.
main = enginefacade.transaction_context()
main.configure(sqlite_fk=True)

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
