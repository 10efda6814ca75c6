"""A transaction left open by a stopped conductor locks only its own rows,
and holds up no takeover of the rest of its work.

On MariaDB, Cyborg's sessions run at READ COMMITTED (cyborg.db.session):
a locking read of the ARQs of one instance then locks the rows it finds,
not the gaps of the instance index beside them, so a conductor stopped
inside such a transaction does not hold the binds and deletes of other
instances. At MariaDB's default REPEATABLE READ the same writes wait.
"""

import threading
import uuid

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
import pytest
import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import states
from cyborg.db import claims
from cyborg.db import migration
from cyborg.db import ownership
from cyborg.db import session
from cyborg.tests import backends

pytestmark = pytest.mark.functional

_ARQ = ("INSERT INTO accelerator_requests (uuid, state, "
        "device_profile_group_id, instance_uuid) VALUES (:u, 'Bound', 0, "
        ":i)")


@pytest.fixture
def url():
    with backends.temp_database('mysql') as found:
        engine = engines.create_engine(found)
        migration.upgrade('head', engine=engine)
        with engine.begin() as conn:
            for instance in ('aaaaaaaa-0000-4000-8000-000000000000',
                             'cccccccc-0000-4000-8000-000000000000'):
                conn.execute(sa.text(_ARQ), {'u': str(uuid.uuid4()),
                                             'i': instance})
        engine.dispose()
        yield found


def _second_write_waits(engine):
    """Whether a bind that records an instance beside another's locked
    ARQs waits for that lock (2 s)."""
    stopped = engine.connect()
    other = engine.connect()
    try:
        # NOTE(tests): the stopped conductor's transaction: the ARQs of an
        # instance that has none, locked for a delete.
        stopped.begin()
        stopped.execute(sa.text(
            "SELECT id FROM accelerator_requests WHERE instance_uuid = "
            "'bbbbbbbb-0000-4000-8000-000000000000' FOR UPDATE")).all()
        other.begin()
        other.execute(sa.text('SET SESSION innodb_lock_wait_timeout = 2'))
        try:
            other.execute(sa.text(_ARQ), {
                'u': str(uuid.uuid4()),
                'i': 'bbbbbbbb-1111-4000-8000-000000000000'})
        except db_exc.DBDeadlock as exc:
            # NOTE(tests): oslo.db's name for "Lock wait timeout exceeded".
            assert exc.inner_exception.orig.args[0] == 1205, exc
            return True
        return False
    finally:
        other.close()
        stopped.close()


def test_sessions_are_read_committed_and_lock_only_their_rows(url):
    engine = engines.create_engine(url)
    session._read_committed(engine)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text(
                'SELECT @@tx_isolation')).scalar() == \
                'READ-COMMITTED'
        assert not _second_write_waits(engine)
    finally:
        engine.dispose()


def test_at_repeatable_read_the_same_write_waits(url):
    engine = engines.create_engine(url)
    try:
        assert _second_write_waits(engine)
    finally:
        engine.dispose()


@pytest.fixture(params=['mysql', 'postgresql'])
def conductor_db(request, override):
    """A database Cyborg's own sessions use, as a conductor's do."""
    with backends.temp_database(request.param) as found, \
            backends.cyborg_engine(found, override,
                                   session._read_committed) as engine:
        yield engine


def _two_rows(engine, insert):
    """Two rows of ``insert`` (``:u``: a new uuid); their uuids."""
    made = str(uuid.uuid4()), str(uuid.uuid4())
    with engine.begin() as conn:
        for row in made:
            conn.execute(sa.text(insert), {'u': row})
    return made


def _while_locked(engine, table, uuid, work):
    """Run ``work()`` while a stopped conductor's open transaction holds
    the row ``uuid`` of ``table`` locked (it wrote it, as in finishing a
    bind); (whether ``work`` waited for the lock, its answer)."""
    stopped = engine.connect()
    done = {}
    try:
        stopped.begin()
        stopped.execute(sa.text(
            'UPDATE %s SET updated_at = NULL WHERE uuid = :u' % table),
            {'u': uuid})
        worker = threading.Thread(
            target=lambda: done.update(answer=work()), daemon=True)
        worker.start()
        worker.join(20)
        waited = worker.is_alive()
    finally:
        stopped.rollback()
        stopped.close()
    worker.join(60)
    return waited, done.get('answer')


def test_takeover_passes_over_a_row_a_stopped_conductor_holds(
        conductor_db):
    held, free = _two_rows(
        conductor_db, "INSERT INTO accelerator_requests (uuid, state, "
        "device_profile_group_id, owner) VALUES (:u, '%s', 0, 'ctl-a')"
        % states.ARQ_BIND_STARTED)
    ctx = cyborg_context.get_admin_context()
    found = ownership.orphaned(ctx, 'cyborg-conductor', 60, 3600)
    assert [row[0] for row in found] == [held, free]

    waited, taken = _while_locked(
        conductor_db, 'accelerator_requests', held,
        lambda: {arq: ownership.take(ctx, arq, owner, 'ctl-b')
                 for arq, owner, _state in found})
    assert not waited, 'the takeover waited for the stopped transaction'
    assert taken == {held: None, free: states.ARQ_BIND_STARTED}
    # Once the stopped conductor's transaction ends, its row is taken too.
    assert ownership.take(ctx, held, 'ctl-a', 'ctl-b') == \
        states.ARQ_BIND_STARTED
    assert ownership.take(ctx, held, 'ctl-a', 'ctl-c') is None


def test_a_dead_conductors_claims_are_cleared_past_a_locked_device(
        conductor_db):
    held, free = _two_rows(
        conductor_db, "INSERT INTO devices (uuid, type, vendor, model, "
        "hostname, status, claimed_by, claimed_for) VALUES (:u, 'FPGA', "
        "'0x8086', 'm', 'node1', 'ready', 'ctl-a', 'program')")
    ctx = cyborg_context.get_admin_context()

    waited, cleared = _while_locked(
        conductor_db, 'devices', held,
        lambda: claims.clear_stale(ctx, 'cyborg-conductor', 60))
    assert not waited, 'the clearing waited for the stopped transaction'
    assert cleared == [(free, 'ctl-a', 'program')]
    assert claims.clear_stale(ctx, 'cyborg-conductor', 60) == [
        (held, 'ctl-a', 'program')]
