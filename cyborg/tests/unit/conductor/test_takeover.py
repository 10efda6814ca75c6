"""Ownership of ARQ binds and unbinds, and takeover from dead conductors."""

import datetime
import threading
from unittest import mock
import uuid

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from cyborg import states
from cyborg.conductor import manager
from cyborg.conductor import takeover
from cyborg.conductor.bind import store as arq_store
from cyborg.db import api as dbapi
from cyborg.db import models
from cyborg.db import ownership
from cyborg.tests import arq_rows


@pytest.fixture(autouse=True)
def _no_periodic_takeover(override):
    """The stack's own conductor adopts nothing while a test runs (its
    periodic tasks run at its start, before any ARQ exists)."""
    override('heartbeat_interval', 3600, group='conductor')


@pytest.fixture
def deployable(stack, override, ctx, db):
    """The uuid of a fake FPGA deployable whose handles are mdevs, on a
    ready device."""
    override('accelerators_per_device', 4, group='fake_driver')
    stack('node1').report()
    arq_rows.ready(db)
    (dep,) = dbapi.deployables.list(ctx)
    return dep.uuid


@pytest.fixture
def conductors():
    """Call with a host name: a conductor manager whose agents and Nova
    are mocks (not started: the test drives it)."""
    made = []

    def make(host):
        conductor = manager.ConductorManager(host)
        conductor.nova = mock.Mock()
        conductor._agent_api = mock.Mock()
        made.append(conductor)
        return conductor

    yield make
    for conductor in made:
        conductor.del_host()


def _mdev_handles(db):
    with db.begin() as conn:
        conn.execute(sa.update(models.AttachHandle)
                     .values(attach_type='MDEV'))


def _started(ctx, deployable, owner):
    arq = arq_store.create_for_attach(ctx, 'p1')
    assert arq_store.start_bind_on(ctx, arq, str(uuid.uuid4()), deployable,
                                   owner=owner)
    return arq


def _beat(db, ctx, host, age=0):
    """A heartbeat of conductor ``host``, ``age`` seconds ago."""
    dbapi.services.heartbeat(ctx, host, manager.BINARY)
    seen = (datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            - datetime.timedelta(seconds=age))
    with db.begin() as conn:
        conn.execute(sa.update(models.Service)
                     .where(models.Service.host == host)
                     .values(last_seen_up=seen))


def _row(db, arq):
    with db.connect() as conn:
        return conn.execute(sa.select(models.AcceleratorRequest).where(
            models.AcceleratorRequest.uuid == arq)).one()


def test_a_live_owners_bind_is_never_taken(db, ctx, deployable,
                                           conductors, override):
    override('takeover_after', 60, group='conductor')
    arq = _started(ctx, deployable, 'ctl-a')
    _beat(db, ctx, 'ctl-a', age=30)
    other = conductors('ctl-b')
    assert takeover.adopt(ctx, other, manager.BINARY) == []
    # Nor at the start of a conductor: the rule is the same.
    assert takeover.adopt(ctx, other, manager.BINARY, at_start=True) == []
    row = _row(db, arq)
    assert (row.state, row.owner) == (states.ARQ_BIND_STARTED, 'ctl-a')
    other.agent_api.prepare_handle.assert_not_called()


def test_a_dead_owners_bind_goes_to_exactly_one_racer(db, deployable,
                                                      override, ctx):
    override('takeover_after', 60, group='conductor')
    arq = _started(ctx, deployable, 'ctl-a')
    _beat(db, ctx, 'ctl-a', age=61)
    found = ownership.orphaned(ctx, manager.BINARY, 60, 3600)
    assert found == [(arq, 'ctl-a', states.ARQ_BIND_STARTED)]
    barrier = threading.Barrier(2)
    won = {}

    def race(host):
        # NOTE(tests): each thread has its own context, so its own session
        # and transaction.
        from cyborg import context as cyborg_context
        barrier.wait()
        won[host] = ownership.take(cyborg_context.get_admin_context(), arq,
                                   'ctl-a', host)

    threads = [threading.Thread(target=race, args=(host,))
               for host in ('ctl-b', 'ctl-c')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(map(bool, won.values())) == [False, True]
    (winner,) = [host for host, ok in won.items() if ok]
    assert _row(db, arq).owner == winner
    # The loser's stale view of the owner changes nothing.
    assert not ownership.take(ctx, arq, 'ctl-a', 'ctl-d')


def test_an_owner_without_a_service_row_is_dead(db, deployable, ctx,
                                                conductors):
    arq = _started(ctx, deployable, 'ctl-gone')
    assert takeover.adopt(ctx, conductors('ctl-b'), manager.BINARY) == [arq]


def test_takeover_finishes_the_bind_and_tells_nova_once(
        db, deployable, ctx, conductors, override):
    override('takeover_after', 60, group='conductor')
    _mdev_handles(db)
    arq = _started(ctx, deployable, 'ctl-a')
    _beat(db, ctx, 'ctl-a', age=120)
    for host in ('ctl-b', 'ctl-c'):
        _beat(db, ctx, host)
    b, c = conductors('ctl-b'), conductors('ctl-c')
    taken = takeover.adopt(ctx, b, manager.BINARY) + \
        takeover.adopt(ctx, c, manager.BINARY)
    assert taken == [arq]
    row = _row(db, arq)
    assert (row.state, row.owner) == (states.ARQ_BOUND, None)
    assert b.nova.bound.call_count + c.nova.bound.call_count == 1
    (call,) = b.agent_api.prepare_handle.call_args_list
    assert call.kwargs['arq_uuid'] == arq
    c.agent_api.prepare_handle.assert_not_called()


def test_the_conductor_that_lost_a_bind_leaves_the_handle(
        db, deployable, ctx, conductors, override):
    override('takeover_after', 60, group='conductor')
    _mdev_handles(db)
    arq = _started(ctx, deployable, 'ctl-a')
    _beat(db, ctx, 'ctl-a', age=120)
    a, b = conductors('ctl-a'), conductors('ctl-b')
    assert ownership.take(ctx, arq, 'ctl-a', 'ctl-b')
    # ctl-a was only slow: it must neither finish nor undo the bind.
    assert arq_store.finish_bind(ctx, arq, ok=True, owner='ctl-a') == \
        arq_store.LOST
    a.finish_binds(ctx, [arq])
    a.agent_api.prepare_handle.assert_not_called()
    b.finish_binds(ctx, [arq])
    assert _row(db, arq).state == states.ARQ_BOUND
    assert arq_store.finish_bind(ctx, arq, ok=True, owner='ctl-a') == \
        arq_store.LOST
    a.agent_api.release_handle.assert_not_called()
    a.nova.bound.assert_not_called()
    b.nova.bound.assert_called_once()


def test_an_unbind_is_taken_over_until_its_handle_is_released(
        db, deployable, ctx, conductors, override):
    override('takeover_after', 60, group='conductor')
    _mdev_handles(db)
    b = conductors('ctl-b')
    _beat(db, ctx, 'ctl-b')
    arq = _started(ctx, deployable, 'ctl-b')
    b.finish_binds(ctx, [arq])
    handle_id = _row(db, arq).attach_handle_id
    # ctl-a unbinds, then dies before its agent released the mdev.
    (released,) = arq_store.unbind(ctx, [arq], owner='ctl-a')
    assert released['arq'] == arq
    row = _row(db, arq)
    assert (row.state, row.owner, row.attach_handle_id) == (
        states.ARQ_UNBOUND, 'ctl-a', handle_id)
    # Meanwhile the handle is no one else's, and the ARQ cannot rebind.
    with db.connect() as conn:
        assert conn.scalar(sa.select(models.AttachHandle.in_use).where(
            models.AttachHandle.id == handle_id))
    assert takeover.adopt(ctx, b, manager.BINARY) == [arq]
    (call,) = b.agent_api.release_handle.call_args_list
    assert call.kwargs['arq_uuid'] == arq
    row = _row(db, arq)
    assert (row.owner, row.attach_handle_id) == (None, None)
    with db.connect() as conn:
        assert not conn.scalar(sa.select(models.AttachHandle.in_use).where(
            models.AttachHandle.id == handle_id))


def test_a_restarted_conductor_adopts_its_own_former_work(
        db, deployable, ctx, conductors):
    arq = _started(ctx, deployable, 'ctl-a')
    a = conductors('ctl-a')
    _beat(db, ctx, 'ctl-a')
    # Alive and running: its own work is not adopted from itself...
    assert takeover.adopt(ctx, a, manager.BINARY) == []
    # ...but a fresh process of the same host finishes what it left.
    assert takeover.adopt(ctx, a, manager.BINARY, at_start=True) == [arq]
    assert _row(db, arq).state == states.ARQ_BOUND


def _age_taken(db, arq, seconds):
    taken = (datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
             - datetime.timedelta(seconds=seconds))
    with db.begin() as conn:
        conn.execute(sa.update(models.AcceleratorRequest)
                     .where(models.AcceleratorRequest.uuid == arq)
                     .values(taken_at=taken))


def test_an_owner_dying_before_nova_heard_loses_no_event(
        db, deployable, ctx, conductors, override):
    # NOTE(tests): found by tools/bench/chaos.py: killed between Bound and
    # Nova's event, the conductor left Nova waiting for its timeout.
    override('takeover_after', 60, group='conductor')
    arq = _started(ctx, deployable, 'ctl-a')
    instance = _row(db, arq).instance_uuid
    assert arq_store.finish_bind(ctx, arq, ok=True, owner='ctl-a') == (
        instance, states.ARQ_BOUND)
    # Bound, and still held by ctl-a until Nova has its event.
    assert _row(db, arq).owner == 'ctl-a'
    _beat(db, ctx, 'ctl-a', age=120)
    b, c = conductors('ctl-b'), conductors('ctl-c')
    assert takeover.adopt(ctx, b, manager.BINARY) == [arq]
    assert takeover.adopt(ctx, c, manager.BINARY) == []
    b.nova.bound.assert_called_once_with(instance, {arq: True})
    c.nova.bound.assert_not_called()
    b.agent_api.prepare_handle.assert_not_called()
    row = _row(db, arq)
    assert (row.state, row.owner) == (states.ARQ_BOUND, None)


def test_an_owner_stopped_before_its_event_sends_none_once_taken(
        db, deployable, ctx, conductors, override):
    # NOTE(tests): found by tools/bench/chaos.py: SIGSTOPped between Bound
    # and Nova's event, the conductor woke after another had sent it, and
    # sent it again.
    override('takeover_after', 60, group='conductor')
    _mdev_handles(db)
    arq = _started(ctx, deployable, 'ctl-a')
    a, b = conductors('ctl-a'), conductors('ctl-b')
    real_finish = arq_store.finish_bind

    def finish_then_stall(*args, **kwargs):
        done = real_finish(*args, **kwargs)
        # ctl-a stops here; ctl-b finds it dead and sends the event.
        _beat(db, ctx, 'ctl-a', age=120)
        assert takeover.adopt(ctx, b, manager.BINARY) == [arq]
        return done

    with mock.patch.object(arq_store, 'finish_bind', finish_then_stall):
        a.finish_binds(ctx, [arq])
    b.nova.bound.assert_called_once()
    a.nova.bound.assert_not_called()
    row = _row(db, arq)
    assert (row.state, row.owner) == (states.ARQ_BOUND, None)


def test_a_finished_bind_lets_its_arq_go_once_nova_heard(
        db, deployable, ctx, conductors):
    b = conductors('ctl-b')
    arq = _started(ctx, deployable, 'ctl-b')
    b.finish_binds(ctx, [arq])
    b.nova.bound.assert_called_once()
    assert _row(db, arq).owner is None


def test_a_live_conductor_resumes_its_own_stalled_bind(
        db, deployable, ctx, conductors, override):
    # NOTE(tests): found by tools/bench/chaos.py: the cast to itself that
    # finishes a bind failed in a database outage, and nothing retried.
    override('takeover_after', 60, group='conductor')
    b = conductors('ctl-b')
    _beat(db, ctx, 'ctl-b')
    arq = _started(ctx, deployable, 'ctl-b')
    # Recent: its cast may still be on the way.
    assert takeover.resume(ctx, b) == []
    _age_taken(db, arq, 61)
    # Being worked on by this process: left alone.
    with takeover.holding('ctl-b', [arq]) as mine:
        assert mine == [arq]
        assert takeover.resume(ctx, b) == []
        with takeover.holding('ctl-b', [arq]) as again:
            assert again == []
    assert takeover.resume(ctx, b) == [arq]
    row = _row(db, arq)
    assert (row.state, row.owner) == (states.ARQ_BOUND, None)
    b.nova.bound.assert_called_once()
    # A late cast of the same bind does nothing more.
    b.finish_binds(ctx, [arq])
    b.nova.bound.assert_called_once()


def test_an_event_nova_was_not_sent_is_sent_again(
        db, deployable, ctx, conductors, override):
    override('takeover_after', 60, group='conductor')
    b = conductors('ctl-b')
    arq = _started(ctx, deployable, 'ctl-b')
    # Nova answers 503 first (the client returns False), then takes it.
    b.nova.bound.side_effect = [False, True]
    b.finish_binds(ctx, [arq])
    assert _row(db, arq).owner == 'ctl-b'
    # Sent again only after takeover_after, not on every periodic run.
    assert takeover.resume(ctx, b) == []
    _age_taken(db, arq, 61)
    assert takeover.resume(ctx, b) == [arq]
    assert b.nova.bound.call_count == 2
    assert _row(db, arq).owner is None


def test_an_unconfigured_nova_holds_nothing(db, deployable, ctx,
                                            conductors):
    b = conductors('ctl-b')
    b.nova.enabled = False
    b.nova.bound.return_value = False
    arq = _started(ctx, deployable, 'ctl-b')
    b.finish_binds(ctx, [arq])
    assert _row(db, arq).owner is None


def test_events_nova_took_in_a_database_outage_are_not_sent_again(
        db, deployable, ctx, conductors, override):
    # NOTE(tests): found by tools/bench/chaos.py: Nova took the event, the
    # database was down when the conductor went to record it, and the
    # resume after the outage sent it again.
    override('takeover_after', 60, group='conductor')
    b = conductors('ctl-b')
    b.nova.bound.return_value = True
    arq = _started(ctx, deployable, 'ctl-b')
    down = db_exc.DBConnectionError('Galera is down')
    with mock.patch.object(ownership, 'told', side_effect=down):
        b.finish_binds(ctx, [arq])
    b.nova.bound.assert_called_once()
    assert _row(db, arq).owner == 'ctl-b'
    _age_taken(db, arq, 61)
    # The database answers again: what Nova took is recorded, not sent.
    assert takeover.resume(ctx, b) == []
    b.nova.bound.assert_called_once()
    row = _row(db, arq)
    assert (row.state, row.owner) == (states.ARQ_BOUND, None)


def test_a_bind_sending_its_event_is_not_resumed_at_the_same_time(
        db, deployable, ctx, conductors, override):
    override('takeover_after', 60, group='conductor')
    b = conductors('ctl-b')
    arq = _started(ctx, deployable, 'ctl-b')
    resumed = []

    def nova_slow_as_the_bind_outlived_takeover_after(*_args):
        _age_taken(db, arq, 61)
        resumed.extend(takeover.resume(ctx, b))
        return True

    b.nova.bound.side_effect = nova_slow_as_the_bind_outlived_takeover_after
    b.finish_binds(ctx, [arq])
    assert resumed == []
    b.nova.bound.assert_called_once()
    assert _row(db, arq).owner is None


def test_after_a_database_outage_no_one_is_judged_dead_at_once(
        db, deployable, ctx, conductors, override):
    # NOTE(tests): found by tools/bench/chaos.py: every heartbeat stopped
    # with the database; the first conductor to look when it returned
    # took the others' live work.
    override('takeover_after', 60, group='conductor')
    arq = _started(ctx, deployable, 'ctl-a')
    _beat(db, ctx, 'ctl-a', age=61)
    b = conductors('ctl-b')
    down = db_exc.DBConnectionError('Galera is down')
    with mock.patch.object(dbapi.services, 'heartbeat', side_effect=down):
        with pytest.raises(db_exc.DBConnectionError):
            b._heartbeat()
    b._heartbeat()
    b._take_over()
    assert _row(db, arq).owner == 'ctl-a'
    # Reached for takeover_after, ctl-a has had its time to heartbeat.
    later = takeover.time.monotonic() + 61
    with mock.patch.object(takeover.time, 'monotonic', return_value=later):
        b._take_over()
    assert _row(db, arq).owner is None
    b.nova.bound.assert_called_once()


def test_a_bind_that_ended_after_it_was_read_is_taken_as_its_event(
        db, ctx, deployable, conductors, override, monkeypatch):
    override('takeover_after', 60, group='conductor')
    arq = _started(ctx, deployable, 'ctl-a')
    _beat(db, ctx, 'ctl-a', age=61)
    read = ownership.orphaned

    def read_then_ended(*args, **kwargs):
        # NOTE(tests): ctl-a was stopped while finishing the bind; it
        # wakes between the survivor's read and its take, and fails it.
        found = read(*args, **kwargs)
        with db.begin() as conn:
            conn.execute(sa.update(models.AcceleratorRequest)
                         .where(models.AcceleratorRequest.uuid == arq)
                         .values(state=states.ARQ_BIND_FAILED))
        return found

    monkeypatch.setattr(ownership, 'orphaned', read_then_ended)
    other = conductors('ctl-b')
    with mock.patch.object(other, 'finish_binds') as finish, \
            mock.patch.object(takeover, 'announce') as announce:
        assert takeover.adopt(ctx, other, manager.BINARY) == [arq]
    finish.assert_not_called()
    announce.assert_called_once_with(ctx, [arq], other)
    assert _row(db, arq).owner == 'ctl-b'
