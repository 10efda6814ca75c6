"""Device and deployable lists: fixed SELECTs, never stale, WSME's bodies."""

import datetime
import json
import time
import types
import uuid

import microversion_parse
import pytest
import sqlalchemy as sa
import wsme.rest.json as wsme_json

from cyborg.api.types import deployable as deployable_types
from cyborg.api.types import device as device_types
from cyborg.conductor import cache
from cyborg.conductor import manager
from cyborg.conductor import rpcapi
from cyborg.db import lists
from cyborg.db import models
from cyborg.objects import attribute as attribute_obj
from cyborg.objects import base as base_obj
from cyborg.objects import deployable as deployable_obj
from cyborg.objects import device as device_obj
from cyborg.tests.sqlcount import StatementCounter
from cyborg.tests.unit.api.conftest import ADMIN

LISTS = ('/v2/deployables', '/v2/devices')
V24 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.4'})


def _fill(db, count, start=0):
    """``count`` devices of one deployable with two attributes each."""
    now = datetime.datetime(2026, 1, 2, 3, 4, 5)
    with db.begin() as conn:
        for index in range(start, start + count):
            device_id = conn.execute(sa.insert(models.Device).values(
                uuid=str(uuid.uuid4()), type='FPGA', vendor='0xABCD',
                model='m', hostname='host%03d' % index, status='inactive',
                services='["fpga.function:fake"]', created_at=now)
            ).inserted_primary_key[0]
            dep_id = conn.execute(sa.insert(models.Deployable).values(
                uuid=str(uuid.uuid4()), name='host%03d_fake' % index,
                num_accelerators=4, device_id=device_id, driver_name='fake',
                created_at=now)).inserted_primary_key[0]
            conn.execute(sa.insert(models.Attribute), [
                {'uuid': str(uuid.uuid4()), 'deployable_id': dep_id,
                 'key': key, 'value': value, 'created_at': now}
                for key, value in (('rc', 'FPGA'),
                                   ('trait0', 'CUSTOM_FAKE_DEVICE'))])


def _items(api, path, headers=ADMIN):
    return api.get(path, headers=headers).json[path.split('/')[2]
                                                 .split('?')[0]]


def _selects(counter):
    return counter.statements.count('SELECT')


def _statements(db, api, path, headers):
    with StatementCounter(db) as counter:
        api.get(path, headers=headers)
    return counter.statements


@pytest.mark.parametrize('path', LISTS)
@pytest.mark.parametrize('max_age', [300, 0])
def test_statements_do_not_grow_with_the_rows(api, db, override, path,
                                              max_age):
    override('list_cache_max_age', max_age, group='conductor')
    seen = {}
    for start, total in ((0, 10), (10, 100)):
        _fill(db, total - start, start=start)
        assert len(_items(api, path)) == total
        cold = _statements(db, api, path + '?limit=1000', V24)
        warm = _statements(db, api, path + '?limit=1000', V24)
        marker = _items(api, path + '?limit=5', V24)[-1]['uuid']
        paged = _statements(db, api, '%s?limit=5&marker=%s' % (path, marker),
                            V24)
        seen[total] = (cold, warm, paged)
    assert seen[10] == seen[100]
    cold, warm, paged = [[verb for verb in run if verb == 'SELECT']
                         for run in seen[10]]
    assert not set(sum(seen[10], [])) & set(('INSERT', 'UPDATE', 'DELETE'))
    if max_age:
        # NOTE(tests): the fingerprint, then the rows (deployables: and
        # their attributes); a cached list costs the fingerprint alone.
        assert len(cold) == (3 if path == '/v2/deployables' else 2)
        assert len(warm) == 1
    else:
        assert cold == warm


def test_v1_accelerator_list_statements_do_not_grow(api, db, stack):
    seen, statements = {}, []

    def record(conn, cursor, statement, *args):
        # NOTE(tests): the conductor's own liveness writes may run meanwhile.
        if statement.startswith('SELECT') and \
                'FROM services' not in statement:
            statements.append(statement)

    sa.event.listen(db, 'before_cursor_execute', record)
    try:
        # NOTE(tests): past 500 rows, where a selectinload needs a second IN.
        for start, total in ((0, 10), (10, 600)):
            _fill(db, total - start, start=start)
            statements.clear()
            found = api.get('/v1/accelerators', headers=ADMIN).json[
                'accelerator']
            assert len(found) == total
            assert {acc['acc_specs']['acc_capability']['resource_class']
                    for acc in found} == {'FPGA'}
            seen[total] = list(statements)
    finally:
        sa.event.remove(db, 'before_cursor_execute', record)
    assert len(seen[10]) == len(seen[600]) == 5


@pytest.fixture
def world(db, make_device, make_deployable):
    device = make_device()
    deployable = make_deployable(device=device,
                                 attributes=[('rc', 'FPGA')])
    return {'device': device, 'deployable': deployable}


def _device(api, uuid_, headers=V24):
    return {d['uuid']: d for d in _items(api, '/v2/devices', headers)}.get(
        uuid_)


def _deployable(api, uuid_):
    return {d['uuid']: d for d in _items(api, '/v2/deployables')}.get(uuid_)


def test_writes_show_in_the_next_list(api, ctx, world, make_device):
    dev, dep = world['device'], world['deployable']
    assert _device(api, dev.uuid)['status'] == 'inactive'
    assert _deployable(api, dep.uuid)['bitstream_id'] is None

    for status in ('ready', 'maintaining', 'ready'):
        dev.status = status
        dev.save()
        assert _device(api, dev.uuid)['status'] == status

    added = make_device(hostname='other')
    assert _device(api, added.uuid)['hostname'] == 'other'
    added.destroy()
    assert _device(api, added.uuid) is None

    attr = attribute_obj.Attribute(ctx, deployable_id=dep.id,
                                   key='trait1', value='CUSTOM_X')
    attr.create()
    assert json.loads(_deployable(api, dep.uuid)['attributes_list']) == [
        {'rc': 'FPGA'}, {'trait1': 'CUSTOM_X'}]
    attr.destroy()
    assert _deployable(api, dep.uuid)['attributes_list'] == \
        '[{"rc": "FPGA"}]'

    bitstream = str(uuid.uuid4())
    programmed = deployable_obj.Deployable.get(ctx, dep.uuid)
    programmed.bitstream_id = bitstream
    programmed.save()
    assert _deployable(api, dep.uuid)['bitstream_id'] == bitstream


def test_sql_outside_the_objects_shows_in_the_next_list(api, db, world):
    """Every write through the engine is seen, even one that leaves the
    tables' fingerprint as it was (no updated_at, as two updates within
    one second leave it on MariaDB)."""
    dev = world['device']
    assert _device(api, dev.uuid)['status'] == 'inactive'
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(status='ready'))
    assert _device(api, dev.uuid)['status'] == 'ready'
    with db.begin() as conn:
        conn.exec_driver_sql("UPDATE devices SET status = 'maintaining'")
    assert _device(api, dev.uuid)['status'] == 'maintaining'
    with db.begin() as conn:
        conn.execute(sa.delete(models.Device))
    assert _items(api, '/v2/devices') == []
    assert _items(api, '/v2/deployables') == []


def test_a_write_that_matches_no_row_keeps_the_lists(api, db, world,
                                                     monkeypatch, ctx):
    """The conductors' periodic recovery of interrupted activations runs
    an UPDATE of devices that usually matches nothing: the lists stay
    cached and no other conductor is told."""
    from cyborg.conductor import lifecycle

    sent = []
    monkeypatch.setattr(cache.Lists, '_tell_others',
                        lambda self: sent.append(1))
    _device(api, world['device'].uuid)
    with StatementCounter(db) as fresh:
        _device(api, world['device'].uuid)
    assert lifecycle.recover_activations(ctx, 60) == 0
    with StatementCounter(db) as after:
        _device(api, world['device'].uuid)
    assert _selects(after) == _selects(fresh)
    assert sent == []
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(status='ready'))
    assert _device(api, world['device'].uuid)['status'] == 'ready'
    assert sent == [1]


@pytest.fixture
def other_conductor(db, ctx):
    """The cache of a conductor in another process: it sees none of the
    writes made here but through the database and the fanout."""
    other = cache.Lists()
    other.watch = lambda engine: None

    def listed():
        view = other.devices(ctx)
        return {row[0]: row for row in json.loads(view['rows'])}
    return other, listed


def test_another_conductor_sees_inserts_and_deletes_at_once(
        world, make_device, other_conductor):
    other, listed = other_conductor
    assert list(listed()) == [world['device'].uuid]
    added = make_device(hostname='other')
    assert added.uuid in listed()
    added.destroy()
    assert added.uuid not in listed()


def test_another_conductor_sees_an_update_that_is_not_the_latest(
        db, world, make_device, other_conductor):
    """As from a transaction that committed after a later one."""
    other, listed = other_conductor
    late = make_device(hostname='late')
    first, status = world['device'].uuid, lists.DEVICE_FIELDS.index('status')
    device = models.Device.__table__
    with db.begin() as conn:
        for uuid_, second in ((first, 5), (late.uuid, 9)):
            conn.execute(sa.update(device).where(device.c.uuid == uuid_)
                         .values(updated_at=datetime.datetime(
                             2026, 1, 2, 3, 4, second)))
    assert listed()[first][status] == 'inactive'
    with db.begin() as conn:
        conn.execute(sa.update(device).where(device.c.uuid == first).values(
            status='ready',
            updated_at=datetime.datetime(2026, 1, 2, 3, 4, 7)))
    assert listed()[first][status] == 'ready'


def test_another_conductor_sees_updates_once_told(db, world,
                                                  other_conductor):
    other, listed = other_conductor
    status = lists.DEVICE_FIELDS.index('status')
    assert listed()[world['device'].uuid][status] == 'inactive'
    with db.begin() as conn:
        # NOTE(tests): the time of the update stays as it was, as a second
        # update of a row within one second leaves it: only the fanout
        # tells.
        conn.execute(sa.update(models.Device).values(
            status='ready', updated_at=models.Device.updated_at))
    other.invalidate(origin=cache.LISTS.origin)
    assert listed()[world['device'].uuid][status] == 'ready'


def test_the_fanout_is_sent_and_received(api, db, world, monkeypatch,
                                         ctx):
    sent = []
    monkeypatch.setattr(rpcapi.ConductorAPI, '__init__',
                        lambda self, topic=None: None)
    monkeypatch.setattr(rpcapi.ConductorAPI, 'invalidate_lists',
                        lambda self, context, origin: sent.append(origin))
    world['device'].status = 'ready'
    world['device'].save()
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent and set(sent) == {cache.LISTS.origin}

    endpoint = manager.ConductorManager.invalidate_lists
    _device(api, world['device'].uuid)
    with StatementCounter(db) as own:
        endpoint(None, ctx, cache.LISTS.origin)
        _device(api, world['device'].uuid)
    with StatementCounter(db) as told:
        endpoint(None, ctx, 'another-conductor')
        _device(api, world['device'].uuid)
    assert _selects(told) == _selects(own) + 1


def test_max_age(api, db, world, monkeypatch):
    _device(api, world['device'].uuid)
    with StatementCounter(db) as fresh:
        _device(api, world['device'].uuid)
    later = time.monotonic() + 301
    monkeypatch.setattr(cache, 'time',
                        types.SimpleNamespace(monotonic=lambda: later))
    with StatementCounter(db) as expired:
        _device(api, world['device'].uuid)
    assert _selects(expired) == _selects(fresh) + 1


def _wsme_body(collection_type, collection):
    return wsme_json.encode_result(collection, collection_type)


@pytest.mark.parametrize('version', ['2.0', '2.3', '2.4', '2.6'])
def test_bodies_are_those_wsme_renders(api, ctx, world, override, version,
                                       make_device, make_deployable):
    override('public_endpoint', 'http://localhost', group='api')
    make_deployable(device=make_device(hostname='second'), name='second',
                    rp_uuid=str(uuid.uuid4()), bitstream_id=str(uuid.uuid4()),
                    parent_id=world['deployable'].id,
                    attributes=[('rc', 'GPU'), ('trait0', 'CUSTOM_Y')])
    headers = dict(ADMIN, **{'OpenStack-API-Version':
                             'accelerator %s' % version})
    view = device_types.VIEWS(
        microversion_parse.parse_version_string(version))
    expected = _wsme_body(
        device_types.DeviceCollection,
        device_types.DeviceCollection.from_objects(
            device_obj.Device.list(ctx), view=view))
    assert api.get('/v2/devices', headers=headers).text == expected
    expected = _wsme_body(
        deployable_types.DeployableCollection,
        deployable_types.DeployableCollection.from_objects(
            deployable_obj.Deployable.list(ctx),
            cleaning=deployable_types.SHOWS_CLEANING(
                microversion_parse.parse_version_string(version))))
    assert api.get('/v2/deployables', headers=headers).text == expected


@pytest.mark.parametrize('batch', [1, 2, 1000])
def test_rows_read_in_batches_are_those_of_the_objects(
        ctx, world, make_device, make_deployable, monkeypatch, batch):
    """The lists are encoded as the rows stream in, ``lists.BATCH`` at a
    time: the text is ``json.dumps`` of the rows the objects make."""
    monkeypatch.setattr(lists, 'BATCH', batch)
    first = world['deployable']
    make_deployable(device=make_device(hostname='h\u00e9'),
                    name='second "q"', rp_uuid=str(uuid.uuid4()),
                    attributes=[('rc', 'GPU'), ('trait0', 'CUSTOM_\u00e9')])
    make_deployable(device=make_device(hostname='third',
                                       services=['a', 'b']), name='third')
    # NOTE(tests): an attribute created after the others' lands between
    # their ids; each deployable's stay in creation order.
    attribute_obj.Attribute(ctx, deployable_id=first.id, key='trait9',
                            value='CUSTOM_LATE').create()
    for query in ({}, {'sort_key': 'name', 'sort_dir': 'desc'},
                  {'limit': 2}):
        assert lists.deployables(ctx, **query) == base_obj.view_rows(
            deployable_obj.Deployable.list(ctx, **query),
            deployable_obj.Deployable.VIEW_FIELDS)['rows']
    for query in ({}, {'sort_key': 'hostname', 'sort_dir': 'desc'},
                  {'limit': 2}):
        assert lists.devices(ctx, **query) == base_obj.view_rows(
            device_obj.Device.list(ctx, **query),
            device_obj.Device.VIEW_FIELDS)['rows']
