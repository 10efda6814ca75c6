"""Tests of many hosts' reports applied in one transaction."""

import json
import threading

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg.conductor import coalesce
from cyborg.conductor import inventory
from cyborg.db import models
from cyborg.db import services
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.tests.sqlcount import StatementCounter

AGENT = inventory.AGENT_BINARY


def _devices(host, override, count=2, per_device=4):
    override('device_count', count, group='fake_driver')
    override('accelerators_per_device', per_device, group='fake_driver')
    return fake.FakeDriver().discover(base.DiscoveryContext(host))


def _whole(host, override, generation=1, **kwargs):
    return inventory.Report(host=host, devices=_devices(host, override,
                                                        **kwargs),
                            generation=generation,
                            details={'version': '1.0',
                                     'drivers': ['fake_driver'],
                                     'report_interval': 60})


def _dump(engine):
    """Every host's rows, without the uuids and ids the database chose."""
    with engine.connect() as conn:
        devices = conn.execute(sa.select(models.Device.__table__)).all()
        cpids = conn.execute(sa.select(models.ControlpathID.__table__)).all()
        deps = conn.execute(sa.select(models.Deployable.__table__)).all()
        attrs = conn.execute(sa.select(models.Attribute.__table__)).all()
        handles = conn.execute(sa.select(models.AttachHandle.__table__)).all()
        agents = conn.execute(sa.select(models.Service.__table__).where(
            models.Service.binary == AGENT)).all()
    host_of = {d.id: d.hostname for d in devices}
    dep_of = {d.id: (host_of[d.device_id], d.name) for d in deps}
    return {
        'devices': sorted((d.hostname, d.type, d.vendor, d.model,
                           d.std_board_info, d.vendor_board_info, d.status,
                           d.driver_name, d.services) for d in devices),
        'cpids': sorted((host_of[c.device_id], c.cpid_type, c.cpid_info)
                        for c in cpids),
        'deployables': sorted((host_of[d.device_id], d.name,
                               d.num_accelerators, d.driver_name, d.rp_uuid)
                              for d in deps),
        'attributes': sorted((dep_of[a.deployable_id], a.key, a.value)
                             for a in attrs),
        'handles': sorted((dep_of[h.deployable_id], h.attach_type,
                           h.attach_info, h.in_use) for h in handles),
        'agents': sorted((a.host, a.report_generation, a.version, a.drivers,
                          a.report_interval) for a in agents),
    }


def _wipe(engine):
    with engine.begin() as conn:
        for table in reversed(models.Base.metadata.sorted_tables):
            conn.execute(table.delete())


def _sql(counter):
    # NOTE(tests): SQLite's driver sends BEGIN itself; other backends start
    # transactions implicitly.
    return [verb for verb in counter.statements if verb != 'BEGIN']


def _hosts(count):
    return ['node%02d' % index for index in range(count)]


def test_a_batch_writes_what_one_by_one_writes(db, ctx, override):
    hosts = _hosts(6)
    first = [_whole(h, override, count=1 + i % 3) for i, h in
             enumerate(hosts)]
    for item in first:
        inventory.apply_reports(ctx, [item])
    one_by_one = _dump(db)
    second = [_whole(h, override, generation=2, count=2) for h in hosts]
    for item in second:
        inventory.apply_reports(ctx, [item])
    one_by_one_again = _dump(db)

    _wipe(db)
    outcomes = inventory.apply_reports(ctx, first)
    assert all(not isinstance(o, Exception) for o in outcomes)
    assert _dump(db) == one_by_one
    outcomes = inventory.apply_reports(ctx, second)
    assert [o['changed'] for o in outcomes] == [True, False, True] * 2
    assert _dump(db) == one_by_one_again
    assert [len(o['devices']) for o in outcomes] == [2] * 6


def test_a_batch_costs_the_same_statements_for_2_or_20_hosts(db, ctx,
                                                             override):
    counts = {}
    for size in (2, 20):
        reports = [_whole(h, override, count=8) for h in _hosts(size)]
        with StatementCounter(db) as counter:
            inventory.apply_reports(ctx, reports)
        counts[size] = len(_sql(counter))
        _wipe(db)
    assert counts[2] == counts[20]
    assert counts[20] <= 12


def test_unchanged_hosts_cost_one_update_in_all(db, ctx, override):
    reports = [_whole(h, override) for h in _hosts(10)]
    inventory.apply_reports(ctx, reports)
    with StatementCounter(db) as counter:
        answers = services.agent_heartbeats(
            ctx, AGENT, {h: 1 for h in _hosts(10)})
    assert answers == dict.fromkeys(_hosts(10), True)
    assert _sql(counter) == ['UPDATE']


def test_heartbeats_of_hosts_not_at_their_generation(db, ctx, override):
    inventory.apply_reports(ctx, [_whole(h, override) for h in _hosts(3)])
    answers = services.agent_heartbeats(
        ctx, AGENT, {'node00': 1, 'node01': 7, 'node02': 1, 'ghost': 1})
    assert answers == {'node00': True, 'node01': False, 'node02': True,
                       'ghost': False}
    with db.connect() as conn:
        counts = dict(conn.execute(sa.select(
            models.Service.host, models.Service.report_count)).all())
    assert counts == {'node00': 2, 'node01': 1, 'node02': 2}


def test_a_teardown_deletes_in_one_statement(db, ctx, override):
    inventory.apply_reports(ctx, [_whole(h, override, count=8)
                                  for h in _hosts(5)])
    gone = [inventory.Report(host=h, devices=[], generation=2)
            for h in _hosts(5)]
    with StatementCounter(db) as counter:
        outcomes = inventory.apply_reports(ctx, gone)
    assert [o['devices'] for o in outcomes] == [[]] * 5
    assert counter.statements.count('DELETE') == 1
    dump = _dump(db)
    assert not dump['devices'] and not dump['handles']
    assert not dump['attributes'] and not dump['cpids']


def test_a_stale_report_is_ignored(db, ctx, override):
    inventory.apply_reports(ctx, [_whole('node00', override, generation=5)])
    before = _dump(db)
    stale, fresh = inventory.apply_reports(ctx, [
        _whole('node00', override, generation=4, count=1),
        _whole('node01', override, generation=1)])
    assert isinstance(stale, exception.StaleReport)
    assert stale.kwargs == {'host': 'node00', 'generation': 4, 'current': 5}
    assert fresh['changed'] is True
    after = _dump(db)
    assert [d for d in after['devices'] if d[0] == 'node00'] == \
        before['devices']
    # A report of the generation recorded is a resend: applied again.
    same, = inventory.apply_reports(ctx, [
        _whole('node00', override, generation=5, count=1)])
    assert same['changed'] is True


def test_deltas_out_of_sequence_or_of_unknown_hosts(db, ctx, override):
    inventory.apply_reports(ctx, [_whole('node00', override)])
    wrong_base, unknown, good = inventory.apply_reports(ctx, [
        inventory.Report(host='node00', devices=[], generation=3,
                         base_generation=2, removed=[]),
        inventory.Report(host='stranger', devices=[], generation=2,
                         base_generation=1),
        _whole('node01', override)])
    assert isinstance(wrong_base, exception.GenerationConflict)
    assert isinstance(unknown, exception.GenerationConflict)
    assert good['generation'] == 1
    assert {a[0] for a in _dump(db)['agents']} == {'node00', 'node01'}


def test_duplicate_identities_are_turned_away(db, ctx, override):
    twice = _whole('node00', override)
    twice.devices.append(twice.devices[0])
    renamed = _whole('node01', override)
    renamed.devices[1].deployables[0].name = \
        renamed.devices[0].deployables[0].name
    bad_device, bad_name, good = inventory.apply_reports(
        ctx, [twice, renamed, _whole('node02', override)])
    assert isinstance(bad_device, exception.InvalidReport)
    assert 'reported twice' in str(bad_device)
    assert isinstance(bad_name, exception.InvalidReport)
    assert good['changed'] is True
    assert {d[0] for d in _dump(db)['devices']} == {'node02'}


def test_another_hosts_deployable_name_is_not_taken(db, ctx, override):
    inventory.apply_reports(ctx, [_whole('node00', override)])
    before = _dump(db)
    thief = _whole('node01', override)
    thief.devices[0].deployables[0].name = 'node00_FakeDevice'
    also = _whole('node02', override)
    also.devices[0].deployables[0].name = 'brand_new'
    copycat = _whole('node03', override)
    copycat.devices[0].deployables[0].name = 'brand_new'
    stolen, first, second = inventory.apply_reports(ctx,
                                                    [thief, also, copycat])
    assert isinstance(stolen, exception.InvalidReport)
    assert 'belongs to host node00' in str(stolen)
    assert first['changed'] is True
    assert isinstance(second, exception.InvalidReport)
    after = _dump(db)
    assert [d for d in after['deployables'] if d[0] == 'node00'] == \
        before['deployables']
    assert {d[0] for d in after['devices']} == {'node00', 'node02'}


def test_one_host_twice_in_a_batch_applies_both_in_order(db, ctx, override):
    outcomes = inventory.apply_reports(ctx, [
        _whole('node00', override, generation=1, count=1),
        _whole('node00', override, generation=2, count=3)])
    assert [len(o['devices']) for o in outcomes] == [1, 3]
    assert _dump(db)['agents'][0][1] == 2
    assert len(_dump(db)['devices']) == 3


def test_a_batch_another_conductor_got_into_is_applied_one_by_one(
        db, ctx, override, monkeypatch):
    inventory.apply_reports(ctx, [_whole(h, override) for h in _hosts(3)])
    real = services.record_reports
    calls = []

    def interleaved(context, binary, reports):
        calls.append(sorted(reports))
        if len(calls) == 1:
            # As when another conductor recorded one of the hosts between
            # this batch's read and its write.
            return False
        return real(context, binary, reports)

    monkeypatch.setattr(services, 'record_reports', interleaved)
    outcomes = inventory.apply_reports(ctx, [
        _whole(h, override, generation=2, count=3) for h in _hosts(3)])
    assert calls == [_hosts(3)] + [[h] for h in _hosts(3)]
    assert [len(o['devices']) for o in outcomes] == [3, 3, 3]
    dump = _dump(db)
    assert len(dump['devices']) == 9
    assert {a[0]: a[1] for a in dump['agents']} == dict.fromkeys(
        _hosts(3), 2)


def test_details_are_recorded_per_host(db, ctx, override):
    reports = [_whole(h, override) for h in _hosts(2)]
    reports[1].details = {'version': '2.0', 'drivers': ['b', 'a'],
                          'available_drivers': [{'name': 'a'}],
                          'report_interval': 30}
    inventory.apply_reports(ctx, reports)
    reports[0].generation = reports[1].generation = 2
    reports[0].details = {'report_interval': 10}
    reports[1].details = None
    inventory.apply_reports(ctx, reports)
    with db.connect() as conn:
        rows = {r.host: r for r in conn.execute(
            sa.select(models.Service.__table__))}
    assert rows['node00'].report_interval == 10
    assert rows['node00'].version == '1.0'
    assert rows['node01'].version == '2.0'
    assert json.loads(rows['node01'].drivers) == ['a', 'b']
    assert json.loads(rows['node01'].available_drivers) == [{'name': 'a'}]
    assert rows['node01'].report_generation == 2
    assert rows['node01'].report_count == 2


def test_coalescer_batches_waiting_callers():
    release = threading.Event()
    seen = []

    def apply(items):
        seen.append(list(items))
        if len(seen) == 1:
            release.wait(5)
        return [ValueError(i) if i == 3 else i * 10 for i in items]

    batcher = coalesce.Coalescer('test', apply, max_items=100)
    results = {}

    def call(item):
        try:
            results[item] = batcher.submit(item)
        except ValueError as exc:
            results[item] = exc

    first = threading.Thread(target=call, args=(0,))
    first.start()
    while not seen:
        threading.Event().wait(0.01)
    others = [threading.Thread(target=call, args=(i,)) for i in range(1, 6)]
    for thread in others:
        thread.start()
    while batcher._queue.qsize() < 5:
        threading.Event().wait(0.01)
    release.set()
    for thread in [first] + others:
        thread.join(5)
    batcher.stop()
    assert seen[0] == [0]
    assert sorted(seen[1]) == [1, 2, 3, 4, 5]
    assert isinstance(results.pop(3), ValueError)
    assert results == {0: 0, 1: 10, 2: 20, 4: 40, 5: 50}
    with pytest.raises(RuntimeError):
        batcher.submit(7)


@pytest.fixture
def conductor(db):
    from cyborg.conductor import manager

    conductor = manager.ConductorManager('ctl')
    yield conductor
    conductor.del_host()


@pytest.mark.parametrize('host', ['', 'two words', 'a/b', 'x' * 256,
                                  'bell\x07', None])
def test_reports_of_invalid_host_names_are_turned_away(conductor, db, ctx,
                                                       override, host):
    primitive = report.HostReport(host=host, devices=_devices(
        'node00', override)).to_primitive()
    with pytest.raises(messaging.ExpectedException) as caught:
        conductor.report_data(ctx, host, dict(primitive, generation=1))
    assert isinstance(caught.value.exc_info[1], exception.Invalid)
    assert conductor.agent_heartbeat(ctx, host, 1) is False
    assert _dump(db)['devices'] == []


def test_a_report_sent_as_another_host_is_turned_away(conductor, ctx,
                                                      override):
    primitive = report.HostReport(host='node00', devices=_devices(
        'node00', override)).to_primitive()
    with pytest.raises(messaging.ExpectedException) as caught:
        conductor.report_data(ctx, 'node01', dict(primitive, generation=1))
    assert 'sent as node01' in str(caught.value.exc_info[1])
    result = conductor.report_data(ctx, 'node00',
                                   dict(primitive, generation=1))
    assert len(result['devices']) == 2
    assert conductor.agent_heartbeat(ctx, 'node00', 1) is True
    assert conductor.agent_heartbeat(ctx, 'node00', 0) is False


@pytest.mark.parametrize('returning', [True, False])
def test_new_rows_of_a_batch_point_at_their_own_parents(db, ctx, override,
                                                        monkeypatch,
                                                        returning):
    """Rows inserted by table for a whole batch: each control path,
    deployable, attribute and handle belongs to its own device, with the
    ids from RETURNING or (as on MySQL, which lacks it) read back."""
    monkeypatch.setattr(db.dialect, 'insert_executemany_returning',
                        returning)
    reports = [_whole(h, override, count=3) for h in _hosts(4)]
    outcomes = inventory.apply_reports(ctx, reports)
    with db.connect() as conn:
        devices = {d.id: d for d in conn.execute(
            sa.select(models.Device.__table__))}
        cpids = {c.id: c for c in conn.execute(
            sa.select(models.ControlpathID.__table__))}
        deps = {d.id: d for d in conn.execute(
            sa.select(models.Deployable.__table__))}
        attrs = conn.execute(sa.select(models.Attribute.__table__)).all()
        handles = conn.execute(
            sa.select(models.AttachHandle.__table__)).all()
    assert len(devices) == len(cpids) == len(deps) == 12
    by_uuid = {d.uuid: d for d in devices.values()}
    for sent, outcome in zip(reports, outcomes, strict=True):
        for state in outcome['devices']:
            device = by_uuid[state['uuid']]
            assert device.hostname == sent.host
            (cpid,) = [c for c in cpids.values() if c.device_id == device.id]
            assert json.loads(cpid.cpid_info) == json.loads(
                state['controlpath'][1])
    for dep in deps.values():
        device = devices[dep.device_id]
        assert dep.name.startswith(device.hostname)
    assert {a.deployable_id for a in attrs} == set(deps)
    assert len(handles) == 12 * 4
    for handle in handles:
        dep = deps[handle.deployable_id]
        assert cpids[handle.cpid_id].device_id == dep.device_id
        assert json.loads(handle.attach_info)['bus'] == json.loads(
            cpids[handle.cpid_id].cpid_info)['bus']
