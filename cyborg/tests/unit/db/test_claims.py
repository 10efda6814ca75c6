"""Device claims in the database: taken once, refused, released, cleared."""

import datetime

import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg.api import errors
from cyborg.db import claims
from cyborg.db import models
from cyborg.db import services

BINARY = 'cyborg-conductor'
D1 = '11111111-1111-1111-1111-111111111111'
D2 = '22222222-2222-2222-2222-222222222222'
LONG_AGO = datetime.datetime(2000, 1, 1)


@pytest.fixture
def devices(db, ctx):
    """Two devices of one host, and two live conductors."""
    with db.begin() as conn:
        conn.execute(sa.insert(models.Device), [
            dict(uuid=uuid, type='FPGA', vendor='0xABCD', model='m',
                 hostname='node1', status='ready', driver_name='fake')
            for uuid in (D1, D2)])
    for host in ('ctl-1', 'ctl-2'):
        services.heartbeat(ctx, host, BINARY)
    return db


def _set(db, table, where, **values):
    with db.begin() as conn:
        conn.execute(sa.update(table).where(where).values(**values))


def test_a_claim_is_recorded_with_its_workflow(devices, ctx):
    assert claims.holder(ctx, D1) is None
    claims.claim(ctx, [D1], 'program', 'ctl-1')
    assert claims.holder(ctx, D1) == ('ctl-1', 'program')
    assert claims.holder(ctx, D2) is None


@pytest.mark.parametrize('second', ['ctl-2', 'ctl-1'])
def test_a_second_claim_is_refused_naming_device_workflow_and_conductor(
        devices, ctx, second):
    claims.claim(ctx, [D1], 'program', 'ctl-1')
    with pytest.raises(exception.DeviceClaimed) as caught:
        claims.claim(ctx, [D1], 'scrub', second)
    message = str(caught.value)
    assert D1 in message
    assert 'program' in message
    assert 'ctl-1' in message
    assert errors.status_for(caught.value) == 409
    # The first claim is untouched.
    assert claims.holder(ctx, D1) == ('ctl-1', 'program')


def test_claiming_several_is_all_or_nothing(devices, ctx):
    claims.claim(ctx, [D2], 'mode switch', 'ctl-2')
    with pytest.raises(exception.DeviceClaimed) as caught:
        claims.claim(ctx, [D1, D2], 'driver update', 'ctl-1')
    assert D2 in str(caught.value)
    assert claims.holder(ctx, D1) is None
    claims.release(ctx, [D2], 'mode switch', 'ctl-2')
    claims.claim(ctx, [D1, D2], 'driver update', 'ctl-1')
    assert claims.holder(ctx, D1) == claims.holder(ctx, D2) == (
        'ctl-1', 'driver update')


def test_claiming_nothing_does_nothing(devices, ctx):
    claims.claim(ctx, [], 'driver install', 'ctl-1')
    assert claims.release(ctx, [], 'driver install', 'ctl-1') == 0


def test_a_missing_device_is_not_found(devices, ctx):
    with pytest.raises(exception.DeviceNotFound):
        claims.claim(ctx, ['no-such-device'], 'program', 'ctl-1')
    with pytest.raises(exception.DeviceNotFound):
        claims.holder(ctx, 'no-such-device')


def test_only_the_holder_releases_its_claim(devices, ctx):
    claims.claim(ctx, [D1], 'program', 'ctl-1')
    assert claims.release(ctx, [D1], 'program', 'ctl-2') == 0
    assert claims.release(ctx, [D1], 'scrub', 'ctl-1') == 0
    assert claims.holder(ctx, D1) == ('ctl-1', 'program')
    assert claims.release(ctx, [D1], 'program', 'ctl-1') == 1
    assert claims.holder(ctx, D1) is None
    # Free again: any conductor claims it.
    claims.claim(ctx, [D1], 'activate', 'ctl-2')
    assert claims.holder(ctx, D1) == ('ctl-2', 'activate')


def test_a_claim_survives_while_its_conductor_heartbeats(devices, ctx):
    claims.claim(ctx, [D1], 'program', 'ctl-1')
    services.heartbeat(ctx, 'ctl-1', BINARY)
    assert claims.clear_stale(ctx, BINARY, 60) == []
    assert claims.holder(ctx, D1) == ('ctl-1', 'program')


def test_a_dead_conductors_claim_is_cleared(devices, ctx, db):
    claims.claim(ctx, [D1], 'program', 'ctl-1')
    claims.claim(ctx, [D2], 'scrub', 'ctl-2')
    _set(db, models.Service, models.Service.host == 'ctl-1',
         last_seen_up=LONG_AGO)
    assert claims.clear_stale(ctx, BINARY, 60) == [(D1, 'ctl-1', 'program')]
    assert claims.holder(ctx, D1) is None
    # The live conductor's claim stays, and the device freed is taken.
    assert claims.holder(ctx, D2) == ('ctl-2', 'scrub')
    claims.claim(ctx, [D1], 'program', 'ctl-2')
    assert claims.clear_stale(ctx, BINARY, 60) == []


def test_a_conductor_without_a_service_row_holds_nothing(devices, ctx):
    claims.claim(ctx, [D1], 'program', 'ctl-gone')
    assert claims.clear_stale(ctx, BINARY, 60) == [
        (D1, 'ctl-gone', 'program')]


def test_at_start_a_former_process_of_the_host_holds_nothing(devices, ctx):
    claims.claim(ctx, [D1], 'activate', 'ctl-1')
    claims.claim(ctx, [D2], 'program', 'ctl-2')
    assert claims.clear_stale(ctx, BINARY, 60, mine='ctl-1') == [
        (D1, 'ctl-1', 'activate')]
    assert claims.holder(ctx, D2) == ('ctl-2', 'program')


def test_forgotten_claims_of_a_live_conductor_are_cleared(devices, ctx,
                                                          db):
    claims.claim(ctx, [D1], 'program', 'ctl-1')
    claims.claim(ctx, [D2], 'scrub', 'ctl-1')
    # Recent ones are left: a workflow may have just taken them.
    assert claims.clear_forgotten(ctx, 'ctl-1', set(), 60) == []
    _set(db, models.Device, models.Device.uuid.in_([D1, D2]),
         claimed_at=LONG_AGO)
    # One still held by a workflow of this process is kept.
    assert claims.clear_forgotten(ctx, 'ctl-1', {D2}, 60) == [
        (D1, 'program')]
    assert claims.holder(ctx, D1) is None
    assert claims.holder(ctx, D2) == ('ctl-1', 'scrub')
    assert claims.clear_forgotten(ctx, 'ctl-2', set(), 60) == []


def test_devices_of_a_driver_on_a_host(devices, ctx):
    assert claims.devices_of(ctx, 'node1', 'fake') == [D1, D2]
    assert claims.devices_of(ctx, 'node1', 'other') == []
    assert claims.devices_of(ctx, 'node2', 'fake') == []
