"""A conductor whose clock is wrong: it takes nothing, and says so."""

import datetime
import logging
import time
from unittest import mock
import uuid

import pytest
import sqlalchemy as sa

from cyborg import deadline
from cyborg import states
from cyborg.conductor import manager
from cyborg.conductor import skew
from cyborg.conductor import takeover
from cyborg.conductor.bind import store as arq_store
from cyborg.db import api as dbapi
from cyborg.db import models
from cyborg.objects import service as service_obj
from cyborg.tests import arq_rows
from cyborg.tests import skewed_clock


@pytest.fixture(autouse=True)
def _no_periodic_takeover(override):
    override('heartbeat_interval', 3600, group='conductor')
    override('takeover_after', 60, group='conductor')


@pytest.fixture
def deployable(stack, override, ctx, db):
    override('accelerators_per_device', 4, group='fake_driver')
    stack('node1').report()
    arq_rows.ready(db)
    (dep,) = dbapi.deployables.list(ctx)
    return dep.uuid


@pytest.fixture
def conductors():
    """Call with a host name: a conductor whose agents and Nova are
    mocks (not started: the test drives it)."""
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


@pytest.fixture
def clock(monkeypatch):
    """Call with seconds: this process's clock goes that far off."""
    return lambda seconds: skewed_clock.skew(monkeypatch, seconds)


def _started(ctx, deployable, owner):
    arq = arq_store.create_for_attach(ctx, 'p1')
    assert arq_store.start_bind_on(ctx, arq, str(uuid.uuid4()), deployable,
                                   owner=owner)
    return arq


def _utc():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _seen(db, host):
    with db.connect() as conn:
        return conn.execute(sa.select(
            models.Service.last_seen_up, models.Service.clock_skew)
            .where(models.Service.host == host)).one()


def _age(db, host, seconds):
    """Make the last heartbeat of ``host`` ``seconds`` old, by the
    database's clock (this process's real one, here)."""
    with db.begin() as conn:
        conn.execute(sa.update(models.Service)
                     .where(models.Service.host == host)
                     .values(last_seen_up=_utc() -
                             datetime.timedelta(seconds=seconds)))


def _owner(db, arq):
    with db.connect() as conn:
        return conn.execute(sa.select(
            models.AcceleratorRequest.state, models.AcceleratorRequest.owner)
            .where(models.AcceleratorRequest.uuid == arq)).one()


def test_a_conductor_120_s_ahead_takes_nothing_from_a_live_one(
        db, ctx, deployable, conductors, clock):
    arq = _started(ctx, deployable, 'ctl-a')
    conductors('ctl-a')._heartbeat()
    clock(120)
    ahead = conductors('ctl-b')
    # NOTE(tests): by this process's clock ctl-a's heartbeat is now two
    # minutes old, twice takeover_after.
    assert skew.measure(ctx) == pytest.approx(120, abs=1)
    ahead._heartbeat()
    assert takeover.adopt(ctx, ahead, manager.BINARY) == []
    assert takeover.adopt(ctx, ahead, manager.BINARY, at_start=True) == []
    assert takeover.resume(ctx, ahead) == []
    assert _owner(db, arq) == (states.ARQ_BIND_STARTED, 'ctl-a')
    ahead.agent_api.prepare_handle.assert_not_called()


def test_nor_a_bind_without_owner_that_is_fresh(db, ctx, deployable,
                                                conductors, clock):
    arq = _started(ctx, deployable, None)
    clock(24 * 3600)
    ahead = conductors('ctl-b')
    assert takeover.adopt(ctx, ahead, manager.BINARY) == []
    assert _owner(db, arq) == (states.ARQ_BIND_STARTED, None)


def test_a_conductor_behind_still_takes_a_dead_ones_work(
        db, ctx, deployable, conductors, clock):
    arq = _started(ctx, deployable, 'ctl-a')
    conductors('ctl-a')._heartbeat()
    _age(db, 'ctl-a', 61)
    # NOTE(tests): by a clock 120 s behind, ctl-a's heartbeat lies in the
    # future; the database's says it is 61 s old.
    clock(-120)
    behind = conductors('ctl-b')
    assert takeover.adopt(ctx, behind, manager.BINARY) == [arq]
    # (and finished it, and told Nova)
    assert _owner(db, arq) == (states.ARQ_BOUND, None)


def test_heartbeat_writes_the_databases_time_and_the_skew(db, ctx,
                                                          conductors, clock):
    clock(120)
    conductor = conductors('ctl-b')
    conductor._heartbeat()
    seen, recorded = _seen(db, 'ctl-b')
    assert abs((seen - _utc()).total_seconds()) < 2
    assert recorded == pytest.approx(120, abs=1)
    (svc,) = service_obj.Service.list(ctx, binary=manager.BINARY)
    assert svc.is_up and svc.clock_skew == recorded


def test_the_skew_is_logged_once_each_way(ctx, db, caplog, override):
    override('clock_skew_threshold', 10, group='conductor')
    watch = skew.Watch('ctl-b')
    with caplog.at_level(logging.INFO, logger='cyborg.conductor.skew'):
        assert not watch.check(3.0)
        assert watch.check(120.0)
        assert watch.check(-119.0)
        assert not watch.check(0.5)
        assert not watch.check(-2.0)
    records = [(r.levelno, r.getMessage()) for r in caplog.records
               if r.name == 'cyborg.conductor.skew']
    assert [level for level, _ in records] == [logging.WARNING,
                                               logging.INFO]
    assert '120.0 seconds ahead of' in records[0][1]
    assert 'back within 10' in records[1][1]


def test_liveness_is_judged_by_the_database_time_of_the_read(
        db, ctx, conductors, clock):
    conductors('ctl-a')._heartbeat()
    # NOTE(tests): the API host's clock is far ahead; the record's
    # read_at is the database's time, so the conductor is still up.
    clock(3600)
    (svc,) = service_obj.Service.list(ctx, binary=manager.BINARY)
    assert svc.is_up
    svc.read_at = None
    assert not svc.is_up
    _age(db, 'ctl-a', 1000)
    (svc,) = service_obj.Service.list(ctx, binary=manager.BINARY)
    assert not svc.is_up


def test_service_1_3_backports_to_1_2(ctx):
    svc = service_obj.Service(ctx, host='ctl-a', binary=manager.BINARY,
                              clock_skew=1.5, read_at=_utc())
    data = svc.obj_to_primitive(target_version='1.2')['cyborg_object.data']
    assert 'clock_skew' not in data and 'read_at' not in data


@pytest.fixture
def offset_reset():
    yield
    deadline.set_offset(0)


def test_a_conductor_alone_ahead_judges_deadlines_by_the_others(
        db, ctx, conductors, clock, offset_reset, caplog):
    conductors('ctl-a')._heartbeat()
    # NOTE(tests): the API stamps a call by the right time.
    values = deadline.stamp({}, 30, now=time.time())
    clock(120)
    assert deadline.left(values) < 0
    ahead = conductors('ctl-b')
    with caplog.at_level(logging.INFO, logger='cyborg.conductor.skew'):
        ahead._heartbeat()
        ahead._heartbeat()
        assert deadline.offset() == pytest.approx(120, abs=1)
        assert deadline.left(values) == pytest.approx(30, abs=1)
        clock(0)
        ahead._heartbeat()
    assert deadline.offset() == 0
    said = [r.getMessage() for r in caplog.records
            if 'deadlines of calls' in r.getMessage()]
    assert len(said) == 2, said
    assert 'by its clock less 120' in said[0]
    assert 'by its own clock again' in said[1]


def test_when_every_conductor_is_off_the_database_clock_is(
        db, ctx, conductors, clock, offset_reset):
    clock(120)
    conductors('ctl-a')._heartbeat()
    conductors('ctl-b')._heartbeat()
    assert deadline.offset() == 0


def test_a_conductor_with_no_live_peer_corrects_nothing(
        db, ctx, conductors, clock, offset_reset):
    conductors('ctl-a')._heartbeat()
    _age(db, 'ctl-a', 1000)
    clock(120)
    conductors('ctl-b')._heartbeat()
    assert deadline.offset() == 0


def test_a_skew_within_the_threshold_is_left_alone(
        db, ctx, conductors, clock, offset_reset, override):
    override('clock_skew_threshold', 10, group='conductor')
    conductors('ctl-a')._heartbeat()
    clock(5)
    conductors('ctl-b')._heartbeat()
    assert deadline.offset() == 0
