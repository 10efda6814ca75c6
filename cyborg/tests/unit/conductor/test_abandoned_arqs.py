"""A create whose caller gave up writes nothing; orphans are removed once
and count against no quota."""

import datetime
import logging
import time

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from cyborg import context as cyborg_context
from cyborg import deadline
from cyborg import exception
from cyborg import states
from cyborg.conductor import manager
from cyborg.conductor import orphans
from cyborg.conductor import quota
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor.bind import store as arq_store
from cyborg.db import arqs as arq_db
from cyborg.db import models
from cyborg.db import orphans as orphans_db
from cyborg.db import quota_usage
from cyborg.objects import device_profile as profile_obj
from cyborg.tests.unit.notifications import conftest as notes_conftest

P1 = 'p1'
HOUR = 3600


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


@pytest.fixture
def profile(db, ctx):
    profile_obj.DeviceProfile(
        ctx, uuid=uuidutils.generate_uuid(), name='fpga2',
        groups=[{'resources:FPGA': '2'}]).create()
    return 'fpga2'


def _rows(db):
    with db.connect() as conn:
        return {row.uuid: row for row in conn.execute(
            sa.select(models.AcceleratorRequest)).all()}


def _age(db, uuids, seconds):
    with db.begin() as conn:
        conn.execute(sa.update(models.AcceleratorRequest)
                     .where(models.AcceleratorRequest.uuid.in_(uuids))
                     .values(created_at=_now() - datetime.timedelta(
                         seconds=seconds)))


def _created(ctx, db, age=0, project=P1):
    uuids = [arq.uuid for arq in arq_store.create(ctx, 'fpga2', project)]
    if age:
        _age(db, uuids, age)
    return uuids


def _waiting(seconds):
    ctx = cyborg_context.RequestContext(
        is_admin=True, request_id='req-%s' % uuidutils.generate_uuid(),
        overwrite=False)
    ctx.deadline = time.monotonic() + seconds
    return ctx


def _dropped(caplog):
    return [r for r in caplog.records if 'Dropped' in r.getMessage()]


# --- The create of a caller that gave up --------------------------------


def test_a_create_in_time_is_written(profile, db):
    assert len(_created(_waiting(60), db)) == 2
    assert len(_rows(db)) == 2


def test_a_create_whose_caller_gave_up_writes_nothing(profile, db, caplog):
    ctx = _waiting(-1)
    with caplog.at_level(logging.INFO):
        with pytest.raises(exception.DeadlineExceeded):
            arq_store.create(ctx, 'fpga2', P1)
    assert _rows(db) == {}
    (record,) = _dropped(caplog)
    assert ctx.request_id in record.getMessage()
    assert 'Creating 2 accelerator requests' in record.getMessage()


def test_a_deadline_passing_before_the_commit_rolls_the_create_back(
        profile, db, monkeypatch, caplog):
    ctx = _waiting(0.3)
    flush = orm.Session.flush

    def slow_flush(session, *args, **kwargs):
        # NOTE(tests): the INSERT is made, then the caller gives up while
        # the transaction is still open.
        flush(session, *args, **kwargs)
        time.sleep(0.4)
    monkeypatch.setattr(orm.Session, 'flush', slow_flush)
    with caplog.at_level(logging.INFO):
        with pytest.raises(exception.DeadlineExceeded):
            arq_db.create(ctx, 'fpga2', P1)
    monkeypatch.undo()
    assert _rows(db) == {}
    assert len(_dropped(caplog)) == 1


def test_a_deadline_passing_in_the_quota_recheck_undoes_the_create(
        profile, db, monkeypatch, caplog):
    ctx = _waiting(0.3)
    recheck = quota.recheck

    def slow_recheck(*args):
        time.sleep(0.4)
        return recheck(*args)
    monkeypatch.setattr(quota, 'recheck', slow_recheck)
    with caplog.at_level(logging.INFO):
        with pytest.raises(exception.DeadlineExceeded):
            arq_store.create(ctx, 'fpga2', P1)
    assert _rows(db) == {}
    assert len(_dropped(caplog)) == 1


def test_a_late_create_arqs_call_is_dropped_by_the_conductor(
        stack, profile, db, ctx, monkeypatch, caplog):
    api = conductor_rpcapi.ConductorAPI(timeout=10)
    stamp = deadline.stamp
    # NOTE(tests): as if the message had waited in the queue of a stopped
    # conductor for a minute.
    monkeypatch.setattr(deadline, 'stamp', lambda values, timeout: stamp(
        values, timeout, now=time.time() - 60))
    with caplog.at_level(logging.INFO):
        with pytest.raises(exception.DeadlineExceeded):
            api.create_arqs(ctx, 'fpga2', P1)
    assert _rows(db) == {}
    (record,) = _dropped(caplog)
    assert 'RPC call create_arqs' in record.getMessage()
    assert ctx.request_id in record.getMessage()
    monkeypatch.undo()
    assert len(api.create_arqs(ctx, 'fpga2', P1)) == 2


# --- Orphans --------------------------------------------------------------


def test_orphans_are_old_initial_arqs_of_no_instance(profile, db, ctx):
    fresh = _created(ctx, db, age=60)
    old = _created(ctx, db, age=HOUR + 60)
    bound = _created(ctx, db, age=HOUR + 60)
    with db.begin() as conn:
        conn.execute(sa.update(models.AcceleratorRequest)
                     .where(models.AcceleratorRequest.uuid == bound[0])
                     .values(state=states.ARQ_BIND_STARTED,
                             instance_uuid=uuidutils.generate_uuid(),
                             owner='ctl'))
        conn.execute(sa.update(models.AcceleratorRequest)
                     .where(models.AcceleratorRequest.uuid == bound[1])
                     .values(state=states.ARQ_UNBOUND))
    count, oldest = orphans_db.summary(ctx, HOUR)
    assert count == 2
    assert HOUR + 55 < oldest < HOUR + 120
    assert orphans_db.summary(ctx, 2 * HOUR) == (0, None)
    assert sorted(v['uuid'] for v in orphans_db.remove(ctx, HOUR)) == \
        sorted(old)
    assert sorted(_rows(db)) == sorted(fresh + bound)


def test_the_arq_of_a_v1_attach_is_never_an_orphan(db, ctx):
    uuid = arq_db.create_for_attach(ctx, P1)
    _age(db, [uuid], 2 * HOUR)
    assert orphans_db.summary(ctx, HOUR) == (0, None)
    assert orphans_db.remove(ctx, HOUR) == []


def test_a_bind_between_the_select_and_the_delete_keeps_its_arq(
        profile, db, ctx):
    taken, left = _created(ctx, db, age=2 * HOUR)
    instance = uuidutils.generate_uuid()

    def bind_first(state):
        # NOTE(tests): a bind that committed after the removal's SELECT,
        # before its compare-and-swap DELETE of that row.
        if state.is_delete and not bound:
            bound.append(state.session.execute(
                sa.update(models.AcceleratorRequest)
                .where(models.AcceleratorRequest.uuid == taken)
                .values(state=states.ARQ_BIND_STARTED,
                        instance_uuid=instance)))
    bound = []
    sa.event.listen(orm.Session, 'do_orm_execute', bind_first)
    try:
        gone = orphans_db.remove(ctx, HOUR)
    finally:
        sa.event.remove(orm.Session, 'do_orm_execute', bind_first)
    assert [v['uuid'] for v in gone] == [left]
    assert list(_rows(db)) == [taken]
    assert _rows(db)[taken].instance_uuid == instance


def test_two_conductors_remove_each_orphan_once(profile, db, ctx):
    uuids = _created(ctx, db, age=2 * HOUR)
    first = orphans_db.remove(ctx, HOUR, limit=1)
    second = orphans_db.remove(ctx, HOUR)
    assert orphans_db.remove(ctx, HOUR) == []
    assert sorted(v['uuid'] for v in first + second) == sorted(uuids)


@pytest.fixture
def notes(override):
    notes_conftest.start_test_driver(override)
    yield notes_conftest.Recorded()
    notes_conftest.base.flush(10)
    notes_conftest._impl_test.reset()


def test_the_periodic_task_removes_orphans_and_notifies(
        profile, db, ctx, override, notes, caplog):
    override('orphan_arq_age', HOUR, group='conductor')
    old = _created(ctx, db, age=HOUR + 60)
    fresh = _created(ctx, db)
    conductor = manager.ConductorManager('ctl')
    tasks = dict((task.__name__, interval)
                 for interval, task in conductor.periodic_tasks())
    assert tasks['_remove_orphans'] == orphans.INTERVAL
    # NOTE(tests): a short age is checked as often as it passes.
    override('orphan_arq_age', 20, group='conductor')
    assert orphans.interval() == 20
    with caplog.at_level(logging.INFO):
        conductor._remove_orphans()
    assert sorted(_rows(db)) == sorted(fresh)
    deleted = notes('accelerator.arq.delete')
    assert sorted(n['payload']['cyborg_object.data']['uuid']
                  for n in deleted) == sorted(old)
    assert {n['payload']['cyborg_object.data']['state']
            for n in deleted} == {states.ARQ_INITIAL}
    assert 'Removed 2 accelerator requests' in caplog.text
    # Nothing left: a second run removes and says nothing.
    assert orphans.remove(ctx) == []


def test_removal_takes_every_batch(profile, db, ctx, override, monkeypatch):
    override('orphan_arq_age', HOUR, group='conductor')
    monkeypatch.setattr(orphans, 'BATCH', 2)
    uuids = _created(ctx, db) + _created(ctx, db) + _created(ctx, db)
    _age(db, uuids, 2 * HOUR)
    assert sorted(orphans.remove(ctx)) == sorted(uuids)


def test_removal_is_off_at_zero(profile, db, ctx, override):
    override('orphan_arq_age', 0, group='conductor')
    uuids = _created(ctx, db, age=30 * 86400)
    assert orphans.remove(ctx) == []
    assert sorted(_rows(db)) == sorted(uuids)
    # The status check still reports them, at an hour.
    assert orphans.summary(ctx)[0::2] == (2, orphans.REPORT_AGE)


# --- Quotas -----------------------------------------------------------------


def test_quota_counts_fresh_initial_arqs_but_no_orphan(profile, db, ctx):
    _created(ctx, db, age=60)
    _created(ctx, db, age=HOUR + 60)
    assert quota_usage.usage(ctx, P1) == {'FPGA': 4}
    assert quota_usage.usage(ctx, P1, orphan_age=HOUR) == {'FPGA': 2}
    assert quota_usage.usage(ctx, P1, orphan_age=2 * HOUR) == {'FPGA': 4}


def test_an_orphan_does_not_hold_its_projects_quota(profile, db, ctx,
                                                    override):
    override('limits', {'FPGA': '2'}, group='quota')
    override('orphan_arq_age', HOUR, group='conductor')
    _created(ctx, db, age=HOUR + 60)
    fresh = _created(ctx, db)
    with pytest.raises(exception.QuotaExceeded):
        arq_store.create(ctx, 'fpga2', P1)
    _age(db, fresh, HOUR + 60)
    assert len(arq_store.create(ctx, 'fpga2', P1)) == 2
    override('orphan_arq_age', 0, group='conductor')
    with pytest.raises(exception.QuotaExceeded):
        arq_store.create(ctx, 'fpga2', P1)
