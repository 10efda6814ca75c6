"""Alembic environment: runs Cyborg's revisions on one connection."""

from alembic import context
import sqlalchemy as sa

from cyborg.db import migration
from cyborg.db import models
from cyborg.db import session

config = context.config
target_metadata = models.Base.metadata


def _run(connection: sa.Connection) -> None:
    # NOTE(db): batch mode lets later revisions alter columns on SQLite, which
    # has almost no ALTER TABLE; compare_type makes autogenerate notice type
    # changes, not only added and removed columns.
    context.configure(connection=connection,
                      target_metadata=target_metadata,
                      render_as_batch=True,
                      compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def _run_offline() -> None:
    context.configure(url=config.get_main_option('sqlalchemy.url'),
                      target_metadata=target_metadata,
                      literal_binds=True,
                      render_as_batch=True,
                      compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connectable = config.attributes.get('connection')
    if isinstance(connectable, sa.Connection):
        # NOTE(db): the caller owns this connection and its transaction.
        _run(connectable)
        return
    engine = connectable if connectable is not None else session.get_engine()
    with migration.migration_connection(engine) as connection:
        _run(connection)


if context.is_offline_mode():
    _run_offline()
else:
    _run_online()
