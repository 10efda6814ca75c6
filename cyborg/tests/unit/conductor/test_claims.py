"""Each host-side workflow holds its device's claim while it runs, refuses
a device another holds, and lets the claim go however it ends."""

import datetime
import json

from oslo_db import exception as db_exc
import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import claims
from cyborg.conductor import driver_admin
from cyborg.conductor import hostwork
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.conductor import modes
from cyborg.conductor import scrub
from cyborg.conductor.bind import store as arq_store
from cyborg.db import api as dbapi
from cyborg.db import arqs as arq_db
from cyborg.db import claims as claim_db
from cyborg.db import devices as device_db
from cyborg.db import models
from cyborg.db import services
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.tests import arq_rows

ME, OTHER = 'ctl-1', 'ctl-2'
IMAGE = 'c0ffee00-0000-4000-8000-000000000001'
MODES = ['passthrough', 'vgpu:nvidia-222']
LONG_AGO = datetime.datetime(2000, 1, 1)
FAILURE = exception.DriverError(driver='fake', reason='the card hung')


class _Glance:
    def image(self, image_id):
        return {'id': image_id}


class _Agent:
    """The agents' RPC API; each call records the device's claim as the
    agent saw it, then fails with ``failure`` when set."""

    def __init__(self, ctx, device_uuid, failure=None):
        self.ctx, self.device_uuid, self.failure = ctx, device_uuid, failure
        self.seen = []

    def _work(self, name, result=None):
        self.seen.append((name, claim_db.holder(self.ctx, self.device_uuid)))
        if self.failure is not None:
            raise self.failure
        return result

    def program(self, context, host, *args):
        return self._work('program')

    def install_device(self, context, host, *args):
        return self._work('install_device')

    def set_device_mode(self, context, host, *args):
        return self._work('set_device_mode')

    def scrub_deployable(self, context, host, *args):
        return self._work('scrub_deployable', {'scrubbed': True})

    def install_driver(self, context, host, name):
        return self._work('install_driver', _drivers())

    def update_driver(self, context, host, name, image_id):
        return self._work('update_driver', _drivers())

    def uninstall_driver(self, context, host, name):
        return self._work('uninstall_driver', _drivers())

    def update_device_states(self, context, host, found):
        return True


def _drivers():
    return {'drivers': ['fake_driver'],
            'available_drivers': [{'name': 'fake_driver',
                                   'driver_name': 'fake', 'version': '1'}]}


@pytest.fixture
def device(ready_device, ctx):
    """The ready fake device; its host's agent runs fake_driver."""
    services.record_drivers(ctx, 'node1', services.AGENT_BINARY,
                            ['fake_driver'], _drivers()['available_drivers'])
    return ready_device


def _held_by_other(ctx, device, workflow=claims.PROGRAM):
    claim_db.claim(ctx, [device.uuid], workflow, OTHER)


def _refused(caught, device, workflow=claims.PROGRAM):
    message = str(caught.value)
    assert device.uuid in message and workflow in message
    assert OTHER in message


def _deployable_uuid(db):
    with db.connect() as conn:
        return conn.execute(sa.select(models.Deployable.uuid)).scalar()


# --- Programming (the operator's PATCH) -----------------------------------

def test_program_holds_the_claim_then_releases_it(device, ctx, db):
    agent = _Agent(ctx, device.uuid)
    hostwork.program(ctx, _deployable_uuid(db), IMAGE, agent, _Glance(),
                     owner=ME)
    assert agent.seen == [('program', (ME, claims.PROGRAM))]
    assert claim_db.holder(ctx, device.uuid) is None


def test_a_failed_program_releases_the_claim(device, ctx, db):
    agent = _Agent(ctx, device.uuid, FAILURE)
    with pytest.raises(exception.ProgrammingFailed):
        hostwork.program(ctx, _deployable_uuid(db), IMAGE, agent,
                         _Glance(), owner=ME)
    assert agent.seen == [('program', (ME, claims.PROGRAM))]
    assert claim_db.holder(ctx, device.uuid) is None


def test_program_of_a_claimed_device_is_refused(device, ctx, db):
    _held_by_other(ctx, device, claims.MODE_SWITCH)
    agent = _Agent(ctx, device.uuid)
    with pytest.raises(exception.DeviceClaimed) as caught:
        hostwork.program(ctx, _deployable_uuid(db), IMAGE, agent,
                         _Glance(), owner=ME)
    _refused(caught, device, claims.MODE_SWITCH)
    assert agent.seen == []
    assert claim_db.holder(ctx, device.uuid) == (OTHER, claims.MODE_SWITCH)


# --- Programming at bind --------------------------------------------------

def _bind_job(ctx, db):
    (uuid,) = arq_rows.initial(db, 1)
    assert arq_rows.bind(ctx, db, [uuid]) == ([uuid], [])
    job = arq_store.bind_job(ctx, uuid)
    return dict(job, group={hostwork.BITSTREAM_ID: IMAGE})


def test_a_bind_programs_under_the_claim(device, ctx, db):
    agent = _Agent(ctx, device.uuid)
    assert hostwork.bind(ctx, _bind_job(ctx, db), agent, _Glance(),
                         owner=ME)
    assert agent.seen == [('program', (ME, claims.PROGRAM))]
    assert claim_db.holder(ctx, device.uuid) is None


def test_a_failed_bind_program_releases_the_claim(device, ctx, db):
    agent = _Agent(ctx, device.uuid, FAILURE)
    assert not hostwork.bind(ctx, _bind_job(ctx, db), agent, _Glance(),
                             owner=ME)
    assert agent.seen == [('program', (ME, claims.PROGRAM))]
    assert claim_db.holder(ctx, device.uuid) is None


def test_a_bind_waits_for_the_claim_then_fails(device, ctx, db, override,
                                               monkeypatch):
    override('program_timeout', 1, group='conductor')
    monkeypatch.setattr(claims, 'POLL', 0.05)
    _held_by_other(ctx, device, claims.SCRUB)
    agent = _Agent(ctx, device.uuid)
    assert not hostwork.bind(ctx, _bind_job(ctx, db), agent, _Glance(),
                             owner=ME)
    assert agent.seen == []
    assert claim_db.holder(ctx, device.uuid) == (OTHER, claims.SCRUB)


# --- Activation -----------------------------------------------------------

def _status(ctx, device):
    return dbapi.devices.get(ctx, device.uuid).status


def _inactive(ctx, device):
    assert device_db.swap_status(ctx, device.uuid, states.DEVICE_READY,
                                 states.DEVICE_INACTIVE)


def test_activate_holds_the_claim_then_releases_it(device, ctx):
    _inactive(ctx, device)
    agent = _Agent(ctx, device.uuid)
    found = lifecycle.activate(ctx, device.uuid, agent, owner=ME)
    assert found.status == states.DEVICE_READY
    assert agent.seen == [('install_device', (ME, claims.ACTIVATE))]
    assert claim_db.holder(ctx, device.uuid) is None


def test_a_failed_activation_releases_the_claim(device, ctx):
    _inactive(ctx, device)
    agent = _Agent(ctx, device.uuid, messaging.MessagingTimeout())
    with pytest.raises(exception.AgentUnavailable):
        lifecycle.activate(ctx, device.uuid, agent, owner=ME)
    assert agent.seen == [('install_device', (ME, claims.ACTIVATE))]
    assert claim_db.holder(ctx, device.uuid) is None
    assert _status(ctx, device) == states.DEVICE_INACTIVE


def test_activation_of_a_claimed_device_is_refused(device, ctx):
    _inactive(ctx, device)
    _held_by_other(ctx, device)
    agent = _Agent(ctx, device.uuid)
    with pytest.raises(exception.DeviceClaimed) as caught:
        lifecycle.enable(ctx, device.uuid, agent, owner=ME)
    _refused(caught, device)
    assert agent.seen == []
    # Still inactive: the refusal came before any change.
    assert _status(ctx, device) == states.DEVICE_INACTIVE


# --- Mode switch ----------------------------------------------------------

@pytest.fixture
def modal(device, db):
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(
            mode='passthrough', modes=json.dumps(MODES)))
    return device


def test_a_mode_switch_holds_the_claim_then_releases_it(modal, ctx, db):
    agent = _Agent(ctx, modal.uuid)
    modes.set_mode(ctx, modal.uuid, MODES[1], agent, owner=ME)
    assert agent.seen == [('set_device_mode', (ME, claims.MODE_SWITCH))]
    assert claim_db.holder(ctx, modal.uuid) is None


def test_a_failed_mode_switch_releases_the_claim(modal, ctx):
    agent = _Agent(ctx, modal.uuid, FAILURE)
    with pytest.raises(exception.DeviceModeSwitchFailed):
        modes.set_mode(ctx, modal.uuid, MODES[1], agent, owner=ME)
    assert agent.seen == [('set_device_mode', (ME, claims.MODE_SWITCH))]
    assert claim_db.holder(ctx, modal.uuid) is None


def test_a_mode_switch_of_a_claimed_device_is_refused(modal, ctx, db):
    _held_by_other(ctx, modal, claims.DRIVER_UPDATE)
    agent = _Agent(ctx, modal.uuid)
    with pytest.raises(exception.DeviceClaimed) as caught:
        modes.set_mode(ctx, modal.uuid, MODES[1], agent, owner=ME)
    _refused(caught, modal, claims.DRIVER_UPDATE)
    assert agent.seen == []
    with db.connect() as conn:
        assert conn.execute(sa.select(models.Device.status)).scalar() == (
            states.DEVICE_READY)


# --- Drivers --------------------------------------------------------------

@pytest.mark.parametrize('action, workflow', [
    ('install', claims.DRIVER_INSTALL),
    ('update', claims.DRIVER_UPDATE),
    ('uninstall', claims.DRIVER_UNINSTALL)])
def test_driver_work_claims_the_drivers_devices(device, ctx, action,
                                                workflow):
    agent = _Agent(ctx, device.uuid)
    getattr(driver_admin, action)(ctx, 'node1', 'fake_driver', agent,
                                  owner=ME)
    assert agent.seen == [(action + '_driver', (ME, workflow))]
    assert claim_db.holder(ctx, device.uuid) is None


@pytest.mark.parametrize('action, workflow', [
    ('install', claims.DRIVER_INSTALL),
    ('update', claims.DRIVER_UPDATE),
    ('uninstall', claims.DRIVER_UNINSTALL)])
def test_failed_driver_work_releases_the_claims(device, ctx, action,
                                                workflow):
    agent = _Agent(ctx, device.uuid, FAILURE)
    with pytest.raises((exception.DriverError,
                        exception.DriverUpdateFailed)):
        getattr(driver_admin, action)(ctx, 'node1', 'fake_driver', agent,
                                      owner=ME)
    assert agent.seen == [(action + '_driver', (ME, workflow))]
    assert claim_db.holder(ctx, device.uuid) is None


@pytest.mark.parametrize('action', ['install', 'update', 'uninstall'])
def test_driver_work_on_a_claimed_device_is_refused(device, ctx, action):
    _held_by_other(ctx, device)
    agent = _Agent(ctx, device.uuid)
    with pytest.raises(exception.DeviceClaimed) as caught:
        getattr(driver_admin, action)(ctx, 'node1', 'fake_driver', agent,
                                      owner=ME)
    _refused(caught, device)
    assert agent.seen == []


# --- Scrub ----------------------------------------------------------------

def _cleaning(ctx, db):
    (uuid,) = arq_rows.initial(db, 1)
    assert arq_rows.bind(ctx, db, [uuid]) == ([uuid], [])
    arq_db.finish_bind(ctx, uuid, True)
    arq_db.unbind(ctx, [uuid])


@pytest.fixture
def scrubbing(device, ctx):
    """The device, its agent scrubbing for its driver."""
    found = report.HostReport(host='node1', devices=fake.FakeDriver(
    ).discover(base.DiscoveryContext('node1')))
    inventory.apply_report(ctx, found,
                           details={'scrubbing_drivers': ['fake']})
    return device


def test_a_scrub_holds_the_claim_then_releases_it(scrubbing, ctx, db):
    _cleaning(ctx, db)
    assert _cleaning_row(db)[0] is not None
    agent = _Agent(ctx, scrubbing.uuid)
    assert scrub.run(ctx, ME, agent) == 1
    assert agent.seen == [('scrub_deployable', (ME, claims.SCRUB))]
    assert claim_db.holder(ctx, scrubbing.uuid) is None


def test_a_failed_scrub_releases_the_claim(scrubbing, ctx, db):
    _cleaning(ctx, db)
    agent = _Agent(ctx, scrubbing.uuid, FAILURE)
    assert scrub.run(ctx, ME, agent) == 1
    assert agent.seen == [('scrub_deployable', (ME, claims.SCRUB))]
    assert claim_db.holder(ctx, scrubbing.uuid) is None


def test_a_scrub_of_a_claimed_device_waits_for_a_later_pass(scrubbing, ctx,
                                                            db):
    _cleaning(ctx, db)
    _held_by_other(ctx, scrubbing)
    agent = _Agent(ctx, scrubbing.uuid)
    assert scrub.run(ctx, ME, agent) == 1
    assert agent.seen == []
    # Still to scrub, and no conductor's: the next pass takes it.
    since, owner = _cleaning_row(db)
    assert since is not None and owner is None
    claim_db.release(ctx, [scrubbing.uuid], claims.PROGRAM, OTHER)
    assert scrub.run(ctx, ME, agent) == 1
    assert agent.seen == [('scrub_deployable', (ME, claims.SCRUB))]
    assert _cleaning_row(db) == (None, None)


def _cleaning_row(db):
    with db.connect() as conn:
        return tuple(conn.execute(sa.select(
            models.Deployable.cleaning_since,
            models.Deployable.scrub_owner)).one())


# --- The helper -----------------------------------------------------------

def test_a_release_the_database_refused_is_cleared_later(device, ctx, db,
                                                        monkeypatch):
    def down(*args):
        raise db_exc.DBConnectionError()

    monkeypatch.setattr(claim_db, 'release', down)
    with claims.held(ctx, device.uuid, claims.PROGRAM, ME):
        pass
    monkeypatch.undo()
    assert claim_db.holder(ctx, device.uuid) == (ME, claims.PROGRAM)
    # Recent: left to the next pass.
    assert claims.clear_forgotten(ctx, ME) == []
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(
            claimed_at=LONG_AGO))
    assert claims.clear_forgotten(ctx, ME) == [(device.uuid, claims.PROGRAM)]
    assert claim_db.holder(ctx, device.uuid) is None


def test_a_claim_held_now_is_not_forgotten(device, ctx, db):
    with claims.held(ctx, device.uuid, claims.PROGRAM, ME):
        with db.begin() as conn:
            conn.execute(sa.update(models.Device).values(
                claimed_at=LONG_AGO))
        assert claims.clear_forgotten(ctx, ME) == []
        assert claim_db.holder(ctx, device.uuid) == (ME, claims.PROGRAM)
    assert claim_db.holder(ctx, device.uuid) is None


def test_a_stopped_conductors_claims_are_cleared_and_logged(device, ctx, db,
                                                            caplog):
    services.heartbeat(ctx, ME, 'cyborg-conductor')
    _held_by_other(ctx, device)
    assert claims.clear_stale(ctx, 'cyborg-conductor', ME) == [
        (device.uuid, OTHER, claims.PROGRAM)]
    assert claim_db.holder(ctx, device.uuid) is None
    assert 'Cleared the program claim on device %s of conductor %s' % (
        device.uuid, OTHER) in caplog.text
