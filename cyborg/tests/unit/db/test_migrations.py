"""Migrations on SQLite: they walk both ways and match models.py."""

# NOTE(tests): the checks are functions taking an engine, so that
# cyborg/tests/functional/test_migrations.py runs the very same ones on
# MariaDB and PostgreSQL.

import pprint

from alembic import autogenerate
from alembic import migration as alembic_migration
from alembic import operations
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import test_migrations
import pytest
import sqlalchemy as sa

from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import backends

MODEL_TABLES = frozenset(models.Base.metadata.tables)
VERSION_TABLE = 'alembic_version'


def make_engine(url: str) -> sa.Engine:
    """An engine set up as enginefacade sets up the conductor's."""
    return engines.create_engine(url, sqlite_fk=True,
                                 mysql_sql_mode='TRADITIONAL')


@pytest.fixture
def engine():
    with backends.temp_database('sqlite') as url:
        engine = make_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


def tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def revisions() -> list[str]:
    """Every revision id from the first to the head."""
    from alembic import script as alembic_script
    scripts = alembic_script.ScriptDirectory.from_config(
        migration._config())
    return [rev.revision for rev in reversed(list(
        scripts.walk_revisions()))]


def check_stairway(engine: sa.Engine) -> None:
    """Each revision up, down to its parent and up again, in order."""
    previous = None
    for rev in revisions():
        migration.upgrade(rev, engine=engine)
        assert migration.version(engine) == rev
        migration.downgrade(previous or 'base', engine=engine)
        assert migration.version(engine) == previous
        migration.upgrade(rev, engine=engine)
        previous = rev
    assert previous == migration.head()


def test_stairway(engine):
    check_stairway(engine)


def check_walk(engine: sa.Engine) -> None:
    """Empty -> head -> base -> head, checking the revision and tables."""
    head = migration.head()
    assert migration.version(engine) is None
    assert tables(engine) == set()

    migration.upgrade('head', engine=engine)
    assert migration.version(engine) == head
    assert tables(engine) == MODEL_TABLES | {VERSION_TABLE}

    migration.downgrade('base', engine=engine)
    assert migration.version(engine) is None
    assert tables(engine) == {VERSION_TABLE}

    migration.upgrade('head', engine=engine)
    assert migration.version(engine) == head
    assert tables(engine) == MODEL_TABLES | {VERSION_TABLE}


class _SyncRules(test_migrations.ModelsMigrationsSync):
    """oslo.db's comparison rules (a MySQL BOOLEAN is a TINYINT, ...), used
    without its unittest-only test method."""

    def db_sync(self, engine):
        migration.upgrade('head', engine=engine)

    def __init__(self, engine=None):
        super().__init__()
        self._engine = engine

    def get_engine(self):
        return self._engine

    def get_metadata(self):
        return models.Base.metadata


def schema_differences(engine: sa.Engine,
                       metadata: sa.MetaData = models.Base.metadata) -> list:
    """What alembic would change to turn the database into ``metadata``."""
    rules = _SyncRules(engine)
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={
                'include_object': rules.include_object,
                'compare_type': rules.compare_type,
                'compare_server_default': rules.compare_server_default,
            })
        return autogenerate.compare_metadata(context, metadata)


def check_models_match(engine: sa.Engine) -> None:
    migration.upgrade('head', engine=engine)
    differences = schema_differences(engine)
    assert differences == [], (
        "models.py and the migrations differ; alembic would do:\n%s"
        % pprint.pformat(differences, indent=2, width=72))


def check_foreign_key_actions(engine: sa.Engine) -> None:
    """Deleting a device cascades to what it holds; requests stay, unbound.
    """
    migration.upgrade('head', engine=engine)
    meta = models.Base.metadata.tables
    common = {'created_at': None, 'updated_at': None}
    with engine.begin() as conn:
        conn.execute(meta['devices'].insert(), dict(
            common, id=1, uuid='d1', type='FPGA', vendor='0x8086', model='m',
            hostname='h', status='enabled'))
        conn.execute(meta['controlpath_ids'].insert(), dict(
            common, id=1, uuid='c1', device_id=1, cpid_type='PCI',
            cpid_info='0000:00:01.0'))
        conn.execute(meta['deployables'].insert(), [
            dict(common, id=1, uuid='p1', name='pf', num_accelerators=1,
                 device_id=1, parent_id=None, root_id=None),
            dict(common, id=2, uuid='v1', name='vf', num_accelerators=1,
                 device_id=1, parent_id=1, root_id=1)])
        conn.execute(meta['attributes'].insert(), dict(
            common, id=1, uuid='a1', deployable_id=2, key='rc',
            value='FPGA'))
        conn.execute(meta['attach_handles'].insert(), dict(
            common, id=1, uuid='h1', deployable_id=2, cpid_id=1,
            attach_type='PCI', attach_info='0000:00:01.1', in_use=True))
        conn.execute(meta['device_profiles'].insert(), dict(
            common, id=1, uuid='dp1', name='dp', profile_json='[]'))
        conn.execute(meta['accelerator_requests'].insert(), dict(
            common, id=1, uuid='r1', state='Bound', device_profile_id=1,
            device_profile_group_id=0, attach_handle_id=1, deployable_id=2))

    with engine.begin() as conn:
        conn.execute(meta['devices'].delete())

    with engine.connect() as conn:
        for name in ('controlpath_ids', 'deployables', 'attributes',
                     'attach_handles'):
            count = conn.execute(
                sa.select(sa.func.count()).select_from(meta[name]))
            assert count.scalar() == 0, name
        arq = conn.execute(sa.select(meta['accelerator_requests'])).one()
        assert (arq.attach_handle_id, arq.deployable_id) == (None, None)


def test_version_of_an_empty_database(engine):
    assert migration.version(engine) is None


def test_head_is_one_revision():
    head = migration.head()
    assert isinstance(head, str) and head


def test_walk(engine):
    check_walk(engine)


def test_models_match_migrations(engine):
    check_models_match(engine)


def test_foreign_key_actions(engine):
    check_foreign_key_actions(engine)


def test_sync_check_sees_a_changed_ondelete(engine):
    # NOTE(tests): proves the comparison is not vacuous, for foreign key
    # actions in particular, which alembic only compares when reflected.
    migration.upgrade('head', engine=engine)
    changed = sa.MetaData()
    for table in models.Base.metadata.sorted_tables:
        table.to_metadata(changed)
    for fk in changed.tables['accelerator_requests'].foreign_key_constraints:
        if fk.referred_table.name == 'deployables':
            fk.ondelete = 'CASCADE'
    kinds = [diff[0] for diff in schema_differences(engine, changed)]
    assert kinds == ['remove_fk', 'add_fk']


def test_foreign_keys_are_off_only_while_migrating(engine):
    with migration.migration_connection(engine) as conn:
        assert conn.exec_driver_sql('PRAGMA foreign_keys').scalar() == 0
    with engine.connect() as conn:
        assert conn.exec_driver_sql('PRAGMA foreign_keys').scalar() == 1


def test_batch_alter_keeps_referencing_rows(engine):
    # NOTE(tests): the case migration_connection exists for: batch mode
    # recreates a referenced table, which with foreign keys enforced would
    # cascade the DROP into every device's deployables.
    migration.upgrade('head', engine=engine)
    devices = models.Base.metadata.tables['devices']
    deployables = models.Base.metadata.tables['deployables']
    with engine.begin() as conn:
        conn.execute(devices.insert(), dict(
            id=1, uuid='d1', type='GPU', vendor='v', model='m',
            hostname='h', status='enabled'))
        conn.execute(deployables.insert(), dict(
            id=1, uuid='p1', name='pf', num_accelerators=1, device_id=1))

    with migration.migration_connection(engine) as conn:
        ops = operations.Operations(
            alembic_migration.MigrationContext.configure(conn))
        with ops.batch_alter_table('devices', recreate='always') as batch:
            batch.alter_column('driver_name', type_=sa.String(200))

    with engine.connect() as conn:
        count = conn.execute(
            sa.select(sa.func.count()).select_from(deployables))
        assert count.scalar() == 1
