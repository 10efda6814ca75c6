"""The one enginefacade transaction context of the conductor's database."""

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade
from sqlalchemy import exc as sa_exc

# NOTE(db): enginefacade reads [database] from cfg.CONF when it first starts;
# SQLite ignores foreign keys (and so ON DELETE CASCADE) unless asked.
main = enginefacade.transaction_context()
main.configure(sqlite_fk=True)


def get_engine():
    return main.writer.get_engine()


def _is_busy(exc):
    # NOTE(db): SQLite answers "database is locked" where MariaDB and
    # PostgreSQL report a deadlock; both mean: run the transaction again.
    return isinstance(exc, sa_exc.OperationalError) and \
        'database is locked' in str(exc)


#: Runs a whole writer transaction again when the database says another
#: one got in its way (deadlock, lock timeout, a busy SQLite file).
retry_on_conflict = oslo_db_api.wrap_db_retry(
    max_retries=10, retry_interval=0.02, inc_retry_interval=True,
    max_retry_interval=0.5, retry_on_deadlock=True,
    exception_checker=_is_busy)
