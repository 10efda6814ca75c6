"""The database server's clock on MariaDB and PostgreSQL: UTC, and what
takeover goes by when a conductor's own clock is off."""

import datetime
import json
import uuid

import pytest
import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import states
from cyborg.conductor import skew
from cyborg.db import api as dbapi
from cyborg.db import arqs
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import ownership
from cyborg.db import services
from cyborg.tests import backends
from cyborg.tests import skewed_clock

pytestmark = pytest.mark.functional

CONDUCTOR = 'cyborg-conductor'
#: Session time zones far from UTC: a "now" that followed them would be
#: hours off.
_ZONES = {'mysql': "SET time_zone = '+09:00'",
          'postgresql': "SET TIME ZONE 'America/Los_Angeles'"}


@pytest.fixture(params=['mysql', 'postgresql'])
def engine(request, override):
    zone = _ZONES[request.param]

    def in_zone(engine):
        @sa.event.listens_for(engine, 'connect')
        def _zone(dbapi_connection, record):
            cursor = dbapi_connection.cursor()
            cursor.execute(zone)
            cursor.close()

    with backends.temp_database(request.param) as url, \
            backends.cyborg_engine(url, override, in_zone) as found:
        yield found


@pytest.fixture
def ctx():
    return cyborg_context.get_admin_context()


def _utc():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _bind(ctx, owner):
    """A BindStarted ARQ held by conductor ``owner``."""
    services.heartbeat(ctx, 'node1', services.AGENT_BINARY)
    device = dbapi.devices.create(ctx, {
        'type': 'FPGA', 'vendor': '0xABCD', 'model': 'm',
        'hostname': 'node1', 'status': states.DEVICE_READY})
    cpid = dbapi.controlpath_ids.create(ctx, {
        'device_id': device.id, 'cpid_type': 'PCI',
        'cpid_info': json.dumps({'bus': '00'})})
    dep = dbapi.deployables.create(ctx, {
        'name': 'dep-1', 'num_accelerators': 1, 'device_id': device.id,
        'rp_uuid': str(uuid.uuid4())})
    dbapi.attach_handles.create(ctx, {
        'deployable_id': dep.id, 'cpid_id': cpid.id, 'attach_type': 'PCI',
        'attach_info': '{}', 'in_use': False})
    arq = arqs.create_for_attach(ctx, 'p1')
    assert arqs.start_bind_on(ctx, arq, str(uuid.uuid4()), dep.uuid,
                              owner=owner)
    return arq


def test_utc_now_is_utc_whatever_the_session_zone(engine, ctx):
    found = clock.database_time(ctx)
    assert found.tzinfo is None
    assert abs((found - _utc()).total_seconds()) < 1
    with engine.connect() as conn:
        now, ago = conn.execute(sa.select(clock.utc_now(),
                                          clock.utc_ago(90.5))).one()
    assert (now - ago).total_seconds() == pytest.approx(90.5, abs=0.001)
    assert abs((now - _utc()).total_seconds()) < 1


def test_a_skewed_conductor_takes_nothing_live(engine, ctx, monkeypatch):
    arq = _bind(ctx, 'ctl-a')
    services.heartbeat(ctx, 'ctl-a', CONDUCTOR)
    skewed_clock.skew(monkeypatch, 120)
    assert skew.measure(ctx) == pytest.approx(120, abs=1)
    services.heartbeat(ctx, 'ctl-b', CONDUCTOR, clock_skew=120.0)
    assert ownership.orphaned(ctx, CONDUCTOR, 60, 3600) == []
    assert not ownership.take(ctx, arq, None, 'ctl-b', 3600)
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(
            models.Service.host, models.Service.last_seen_up)).all())
    # NOTE(tests): MariaDB's DATETIME keeps whole seconds.
    assert all(abs((seen - _utc()).total_seconds()) < 2
               for seen in rows.values())

    # Once ctl-a is silent for takeover_after by the database's clock, a
    # conductor behind it takes its work all the same.
    with engine.begin() as conn:
        conn.execute(sa.update(models.Service)
                     .where(models.Service.host == 'ctl-a')
                     .values(last_seen_up=clock.utc_ago(61)))
    skewed_clock.skew(monkeypatch, -120)
    found = ownership.orphaned(ctx, CONDUCTOR, 60, 3600)
    assert found == [(arq, 'ctl-a', states.ARQ_BIND_STARTED)]
    assert ownership.take(ctx, arq, 'ctl-a', 'ctl-b')
    assert ownership.stalled(ctx, 'ctl-b', 60) == []
