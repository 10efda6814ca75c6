"""Scrubbing a deployable between tenants: marked at the last unbind,
reserved, scrubbed by the agent, then offered again (or failed)."""

import datetime

import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.conductor import scrub
from cyborg.db import arqs as arq_db
from cyborg.db import models
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.objects import device as device_obj
from cyborg.tests import arq_rows


class _Agent:
    """The agents' RPC API as the conductor uses it for a scrub."""

    def __init__(self, outcome=None):
        self.outcome = outcome or {'scrubbed': True, 'steps': ['reset']}
        self.scrubbed = []
        self.told = []

    def scrub_deployable(self, context, host, driver_name, cpid_type,
                         cpid_info, deployable_name):
        self.scrubbed.append((host, driver_name, deployable_name))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def update_device_states(self, context, host, found):
        self.told.extend(
            (state['status'],
             sorted(p['reserved'] for p in state['providers'].values()))
            for state in found)
        return True


def _report(ctx, scrubbing):
    found = report.HostReport(host='node1', devices=fake.FakeDriver().discover(
        base.DiscoveryContext('node1')))
    (device,) = found.devices
    inventory.apply_report(ctx, found, details={
        'scrubbing_drivers': [device.driver_name] if scrubbing else []})
    return device.driver_name


@pytest.fixture
def device(db, ctx, override):
    override('accelerators_per_device', 4, group='fake_driver')
    _report(ctx, scrubbing=True)
    (found,) = device_obj.Device.list(ctx)
    assert lifecycle.device_db.swap_status(ctx, found.uuid, found.status,
                                           states.DEVICE_READY)
    return found


def _bound(ctx, db, count):
    uuids = arq_rows.initial(db, count)
    started, failed = arq_rows.bind(ctx, db, uuids)
    assert (sorted(started), failed) == (sorted(uuids), [])
    for uuid in uuids:
        arq_db.finish_bind(ctx, uuid, True)
    return uuids


def _cleaning(db):
    with db.connect() as conn:
        return conn.execute(sa.select(models.Deployable.cleaning_since)
                            ).scalar() is not None


def test_the_last_unbind_marks_it_cleaning_and_reserved(device, ctx, db):
    first, second = _bound(ctx, db, 2)
    arq_db.unbind(ctx, [first])
    assert not _cleaning(db)
    arq_db.unbind(ctx, [second])
    assert _cleaning(db)
    (state,) = inventory.host_states(ctx, 'node1')
    assert all(p['reserved'] for p in state['providers'].values())
    # No bind takes it meanwhile.
    (late,) = arq_rows.initial(db, 1)
    assert arq_rows.bind(ctx, db, [late]) == ([], [late])


def test_a_scrub_returns_the_capacity(device, ctx, db):
    (uuid,) = _bound(ctx, db, 1)
    arq_db.delete(ctx, uuids=[uuid])
    agent = _Agent()
    assert scrub.run(ctx, 'ctl', agent) == 1
    assert agent.scrubbed == [('node1', 'fake', 'node1_FakeDevice')]
    assert not _cleaning(db)
    # Reserved while it ran, offered once done.
    assert agent.told == [(states.DEVICE_READY, [True]),
                          (states.DEVICE_READY, [False])]
    assert scrub.run(ctx, 'ctl', agent) == 0
    (late,) = arq_rows.initial(db, 1)
    assert arq_rows.bind(ctx, db, [late]) == ([late], [])


def test_a_failed_scrub_fails_the_device(device, ctx, db):
    (uuid,) = _bound(ctx, db, 1)
    arq_db.unbind(ctx, [uuid])
    agent = _Agent(exception.DriverError(driver='fake_driver',
                                         reason='reset timed out'))
    scrub.run(ctx, 'ctl', agent)
    found = device_obj.Device.get(ctx, device.uuid)
    assert found.status == states.DEVICE_ERROR
    assert found.status_reason.startswith(states.SCRUB_FAILED)
    assert 'reset timed out' in found.status_reason
    assert found.health == states.HEALTH_FAILED
    assert not _cleaning(db)
    assert agent.told[-1] == (states.DEVICE_ERROR, [True])
    # Only an operator returns it.
    lifecycle.enable(ctx, device.uuid, agent)
    assert device_obj.Device.get(ctx, device.uuid).status == (
        states.DEVICE_READY)


def test_an_agent_that_does_not_answer_leaves_it_cleaning(device, ctx, db):
    (uuid,) = _bound(ctx, db, 1)
    arq_db.unbind(ctx, [uuid])
    silent = _Agent(exception.AgentUnavailable(host='node1',
                                               reason='MessagingTimeout'))
    assert scrub.run(ctx, 'ctl', silent) == 1
    assert _cleaning(db)
    # Another conductor takes it over only once the claim is stale.
    assert scrub.run(ctx, 'ctl-2', _Agent()) == 0
    with db.begin() as conn:
        since = conn.execute(
            sa.select(models.Deployable.cleaning_since)).scalar()
        conn.execute(sa.update(models.Deployable).values(
            cleaning_since=since - datetime.timedelta(
                seconds=scrub.stale_after() + 1)))
    assert scrub.run(ctx, 'ctl-2', _Agent()) == 1
    assert not _cleaning(db)


def test_a_host_that_does_not_scrub_marks_nothing(device, ctx, db):
    _report(ctx, scrubbing=False)
    (uuid,) = _bound(ctx, db, 1)
    arq_db.unbind(ctx, [uuid])
    assert not _cleaning(db)
    assert scrub.run(ctx, 'ctl', _Agent()) == 0
