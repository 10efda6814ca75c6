"""The one enginefacade transaction context of the conductor's database."""

from oslo_db.sqlalchemy import enginefacade

# NOTE(db): enginefacade reads [database] from cfg.CONF when it first starts;
# SQLite ignores foreign keys (and so ON DELETE CASCADE) unless asked.
main = enginefacade.transaction_context()
main.configure(sqlite_fk=True)


def get_engine():
    return main.writer.get_engine()
