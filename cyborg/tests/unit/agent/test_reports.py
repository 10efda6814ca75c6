"""The agent's report protocol against a real conductor (fake transport):
generations, deltas, heartbeats, outages and restarts."""

import json

import oslo_messaging as messaging
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import models
from cyborg.tests.sqlcount import StatementCounter


def _generation(db):
    with db.connect() as conn:
        return conn.execute(sa.select(models.Service.report_generation).where(
            models.Service.binary == 'cyborg-agent')).scalar()


def _device_count(db):
    with db.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(
            models.Device)).scalar()


def test_whole_then_heartbeat_then_delta(stack, db, override):
    agent = stack()
    agent.report()
    assert agent.cache.generation == 1 == _generation(db)
    assert _device_count(db) == 1

    with StatementCounter(db) as counter:
        agent.report()
    assert counter.writes == ['UPDATE']
    assert agent.cache.generation == 1

    override('device_count', 2, group='fake_driver')
    sent = []
    original = agent.conductor.report_delta
    agent.conductor.report_delta = lambda *a, **k: (
        sent.append(a[2]), original(*a, **k))[1]
    agent.report()
    assert [len(d['changed']) for d in sent] == [1]
    assert sent[0]['removed'] == [] and sent[0]['base_generation'] == 1
    assert agent.cache.generation == 2 == _generation(db)
    assert _device_count(db) == 2


def test_outage_loses_nothing_and_sends_nothing_twice(stack, db, override):
    agent = stack()
    agent.report()
    original = agent.conductor.report_delta

    def unreachable(*args, **kwargs):
        raise messaging.MessagingTimeout('conductor down')

    agent.conductor.report_delta = unreachable
    override('device_count', 3, group='fake_driver')
    assert agent.report() == 1
    assert agent.report() == 2          # backs off, keeps discovering
    assert agent.cache.generation == 1 and _device_count(db) == 1

    sent = []
    agent.conductor.report_delta = lambda *a, **k: (
        sent.append(a[2]), original(*a, **k))[1]
    override('device_count', 2, group='fake_driver')
    assert agent.report() is None
    assert len(sent) == 1 and len(sent[0]['changed']) == 1
    assert _device_count(db) == 2 and agent.cache.generation == 2


def test_a_conductor_without_its_database_is_waited_for(stack, db,
                                                        caplog):
    agent = stack()
    agent.report()

    def no_database(*args, **kwargs):
        # NOTE(tests): str() of a rebuilt remote error holds its traceback.
        exc = exception.DatabaseUnavailable(reason='retry later')
        exc.__class__ = type('DatabaseUnavailable_Remote',
                             (exception.DatabaseUnavailable,),
                             {'__str__': lambda self: 'Traceback (...)'})
        raise exc

    agent.conductor.agent_heartbeat = no_database
    assert agent.report() == 1
    assert agent.report() == 2
    assert 'The database is unavailable: retry later' in caplog.text
    assert 'Traceback' not in caplog.text


def test_restart_keeps_the_generation(stack, db):
    first = stack()
    first.report()
    again = stack()
    assert again.cache.generation == 1
    with StatementCounter(db) as counter:
        again.report()
    assert counter.writes == ['UPDATE']
    assert _device_count(db) == 1


def test_conductor_that_lost_the_inventory_gets_it_whole(stack, db):
    agent = stack()
    agent.report()
    with db.begin() as conn:
        conn.execute(sa.delete(models.Device.__table__))
        conn.execute(sa.update(models.Service.__table__)
                     .values(report_generation=None))
    agent.report()
    assert _device_count(db) == 1
    assert agent.cache.generation == 2 == _generation(db)


def test_generation_conflict_sends_the_whole_inventory(stack, db, override):
    agent = stack()
    agent.report()
    with db.begin() as conn:
        conn.execute(sa.update(models.Service.__table__)
                     .values(report_generation=41))
    override('device_count', 2, group='fake_driver')
    agent.report()
    assert _device_count(db) == 2
    # NOTE(tests): its whole inventory as generation 2 is older than the 41
    # recorded; it goes again as 42, so generations never go back.
    assert agent.cache.generation == 42 == _generation(db)


def test_a_stale_whole_report_goes_again_under_a_newer_generation(
        stack, db, override):
    agent = stack()
    agent.report()
    with db.begin() as conn:
        conn.execute(sa.update(models.Service.__table__)
                     .values(report_generation=7))
    agent.cache.generation = None
    override('device_count', 3, group='fake_driver')
    agent.report()
    assert _device_count(db) == 3
    assert agent.cache.generation == 8 == _generation(db)


def test_a_refused_inventory_is_logged_and_not_resent_at_once(
        stack, db, override, caplog):
    agent = stack()
    override('device_count', 2, group='fake_driver')
    fake = agent.tracker.drivers['fake_driver']
    real = fake.discover

    def same_name(ctx):
        devices = real(ctx)
        devices[1].deployables[0].name = devices[0].deployables[0].name
        return devices

    fake.discover = same_name
    assert agent.report() is None
    assert agent.cache.generation is None and _device_count(db) == 0
    assert 'refused the inventory of 2 devices' in caplog.text
    assert 'reported twice' in caplog.text


def test_damaged_cache_costs_one_whole_report(stack, db, tmp_path):
    agent = stack()
    agent.report()
    with open(agent.cache.path, 'w') as handle:
        handle.write('{not json')
    again = stack()
    assert again.cache.generation is None
    again.report()
    assert _device_count(db) == 1
    with open(again.cache.path) as handle:
        assert json.load(handle)['generation'] == 1


def test_failed_driver_keeps_its_devices(stack, db):
    agent = stack()
    agent.report()
    fake = agent.tracker.drivers['fake_driver']

    def broken(ctx):
        raise OSError('sysfs unreadable')

    fake.discover = broken
    agent.report()
    assert _device_count(db) == 1
    assert agent.cache.generation == 1
