"""Schema migrations (alembic) driven from code, with no alembic.ini."""

from collections.abc import Iterator
import contextlib

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import sqlalchemy as sa

from cyborg.db import session

# NOTE(db): a package resource rather than a path, so the revisions are found
# wherever (and however zipped) Cyborg is installed.
SCRIPT_LOCATION = 'cyborg.db:migrations'


def _engine(engine: sa.Engine | None) -> sa.Engine:
    if engine is not None:
        return engine
    return session.get_engine()


def _config(connection: sa.Connection | None = None) -> alembic_config.Config:
    config = alembic_config.Config()
    config.set_main_option('script_location', SCRIPT_LOCATION)
    if connection is not None:
        # NOTE(db): env.py runs on this connection instead of opening one.
        config.attributes['connection'] = connection
    return config


def _sqlite_foreign_keys(connection: sa.Connection,
                         enforce: bool | None = None) -> bool:
    """Read (and with ``enforce`` set) SQLite's foreign key enforcement."""
    # NOTE(db): the pragma is a no-op inside a transaction, and both
    # SQLAlchemy and oslo.db's SQLite setup begin one on the first statement;
    # the driver's own connection is still outside one here.
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        if enforce is not None:
            cursor.execute('PRAGMA foreign_keys = %s'
                           % ('ON' if enforce else 'OFF'))
        cursor.execute('PRAGMA foreign_keys')
        return bool(cursor.fetchone()[0])
    finally:
        cursor.close()


@contextlib.contextmanager
def migration_connection(engine: sa.Engine) -> Iterator[sa.Connection]:
    """Yield a connection in a transaction that migrations may run on.

    The transaction commits when the block ends without an error. On SQLite
    foreign keys are not enforced inside the block, and enforced after it
    again if they were before.
    """
    with engine.connect() as connection:
        # NOTE(db): alembic's batch mode changes a SQLite table by copying
        # it and dropping the original; with foreign keys enforced that DROP
        # first deletes every row, which cascades into (or is refused by)
        # the tables that reference it.
        sqlite = connection.dialect.name == 'sqlite'
        enforced = sqlite and _sqlite_foreign_keys(connection)
        if enforced:
            _sqlite_foreign_keys(connection, enforce=False)
        try:
            with connection.begin():
                yield connection
        finally:
            if enforced and not connection.invalidated:
                _sqlite_foreign_keys(connection, enforce=True)


def upgrade(revision: str = 'head', engine: sa.Engine | None = None) -> None:
    """Upgrade the schema to ``revision`` (default: the newest)."""
    with migration_connection(_engine(engine)) as connection:
        command.upgrade(_config(connection), revision)


def downgrade(revision: str, engine: sa.Engine | None = None) -> None:
    """Downgrade the schema to ``revision`` ('base' removes every table)."""
    with migration_connection(_engine(engine)) as connection:
        command.downgrade(_config(connection), revision)


def version(engine: sa.Engine | None = None) -> str | None:
    """The revision the database is at, or None if it has none."""
    with _engine(engine).connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def head(engine: sa.Engine | None = None) -> str:
    """The newest revision of the code; ``engine`` is accepted and unused,
    so that callers may treat the four functions alike."""
    directory = alembic_script.ScriptDirectory.from_config(_config())
    return directory.get_current_head()
