"""Every write transaction of cyborg/db runs again after a deadlock.

On a Galera cluster a certification failure ends a transaction at its
commit and MariaDB reports it as a deadlock (1213, DBDeadlock). The write
functions are found by reading the source: a function or method under a
``main.writer`` decorator, or one that opens ``main.writer.using(...)``.
"""

import ast
import datetime
import importlib
import json
import pathlib
import uuid

from oslo_db import exception as db_exc
import pytest
from sqlalchemy import orm

from cyborg import states
from cyborg.db import api as dbapi
from cyborg.db import session

DB = pathlib.Path(__file__).parents[3] / 'db'


def _is_writer(node):
    text = ast.unparse(node)
    return text == 'main.writer' or text.endswith('.main.writer')


def _opens_writer(node):
    return any('main.writer.using(' in ast.unparse(call)
               for call in ast.walk(node) if isinstance(call, ast.Call))


def _writers():
    """``{'module.function' or 'module.Class.method': (decorators
    above main.writer, whether it opens one in its body)}``."""
    found = {}
    for path in sorted(DB.glob('*.py')):
        tree = ast.parse(path.read_text())
        scopes = [(path.stem, tree.body)] + [
            ('%s.%s' % (path.stem, node.name), node.body)
            for node in tree.body if isinstance(node, ast.ClassDef)]
        for prefix, body in scopes:
            for node in body:
                if not isinstance(node, ast.FunctionDef):
                    continue
                marks = [i for i, d in enumerate(node.decorator_list)
                         if _is_writer(d)]
                if marks or _opens_writer(node):
                    above = [ast.unparse(d)
                             for d in node.decorator_list[:marks[0]]] \
                        if marks else None
                    found['%s.%s' % (prefix, node.name)] = above
    return found


WRITERS = _writers()


def _resolve(name):
    module, *rest = name.split('.')
    found = importlib.import_module('cyborg.db.%s' % module)
    for part in rest:
        found = getattr(found, part)
    return found


def test_the_writers_are_found():
    assert len(WRITERS) > 40
    for name in ('ownership.take', 'services.heartbeat',
                 'services.agent_heartbeats', 'query.Resource.create',
                 'inventory.apply_together', 'devices.swap_status'):
        assert name in WRITERS


@pytest.mark.parametrize('name', sorted(WRITERS))
def test_every_writer_retries_outside_its_transaction(name):
    above = WRITERS[name]
    assert above, (
        '%s opens a write transaction without a retry: put '
        '@session.retry_on_conflict (or session.retrying(...)) above '
        '@main.writer' % name)
    func = _resolve(name)
    # NOTE(tests): the outermost wrapper is the retry's own (the attribute
    # points at it); under main.writer it would retry inside a transaction
    # the deadlock has already ended.
    assert getattr(func, session.RETRIES, None) is func, name


# --- Each writer, its first commit failing -----------------------------------

def _utc():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


@pytest.fixture
def world(db, ctx):
    """An agent's host with one device (its deployable, handle and an
    attribute), a device profile, an Initial ARQ and an operator's
    accelerator, all made through the write functions."""
    from cyborg.db import accelerators
    from cyborg.db import arqs
    from cyborg.db import attributes
    from cyborg.db import services

    services.heartbeat(ctx, 'node1', services.AGENT_BINARY)
    device = dbapi.devices.create(ctx, {
        'type': 'FPGA', 'vendor': '0xABCD', 'model': 'm',
        'hostname': 'node1', 'status': states.DEVICE_READY,
        'driver_name': 'fake_driver',
        'modes': json.dumps(['passthrough', 'vgpu:a']),
        'mode': 'passthrough'})
    cpid = dbapi.controlpath_ids.create(ctx, {
        'device_id': device.id, 'cpid_type': 'PCI',
        'cpid_info': json.dumps({'bus': '00'})})
    dep = dbapi.deployables.create(ctx, {
        'name': 'dep-1', 'num_accelerators': 1, 'device_id': device.id,
        'rp_uuid': str(uuid.uuid4())})
    dbapi.attach_handles.create(ctx, {
        'deployable_id': dep.id, 'cpid_id': cpid.id, 'attach_type': 'PCI',
        'attach_info': '{}', 'in_use': False})
    attribute, _device = attributes.insert(ctx, dep.id, 'k1', 'v1',
                                           lambda row: row.uuid)
    profile = dbapi.device_profiles.create(ctx, {
        'name': 'dp-1',
        'profile_json': json.dumps({'groups': [{'resources:FPGA': '1'}]})})
    (arq,) = arqs.create(ctx, 'dp-1', 'p1')
    acc = accelerators.create(ctx, 'acc-1')
    return {'device': device.uuid, 'deployable': dep, 'rp': dep.rp_uuid,
            'attribute': attribute, 'profile': profile.uuid,
            'arq': arq['uuid'], 'acc': acc['uuid']}


def _job():
    return {'id': 0, 'since': _utc().replace(microsecond=0),
            'device_uuid': str(uuid.uuid4())}


def _new_arq(ctx):
    from cyborg.db import arqs
    return arqs.create(ctx, 'dp-1', 'p1')[0]['uuid']


#: A call of each writer that succeeds in ``world``: name ->
#: function(db module, ctx, world) -> callable run with the first commit
#: failing. What the callable needs made first, the outer function makes.
CALLS = {
    'accelerators.create':
        lambda m, c, w: lambda: m.create(c, 'acc-2'),
    'accelerators.update_spec':
        lambda m, c, w: lambda: m.update_spec(c, w['acc'], 'num', 2),
    'accelerators.start_attach':
        lambda m, c, w: lambda: m.start_attach(c, w['acc'], m.HOST, 'node1'),
    'accelerators.set_attach_state':
        lambda m, c, w: lambda: m.set_attach_state(c, w['acc'], m.ATTACHED,
                                                   m.DETACHING),
    'accelerators.clear_attachment':
        lambda m, c, w: lambda: m.clear_attachment(c, w['acc']),
    'accelerators.start_detach':
        lambda m, c, w: lambda: m.start_detach(c, w['acc']),
    'accelerators.recover': lambda m, c, w: lambda: m.recover(c, 60),
    'arq_moves.start_bind':
        lambda m, c, w: lambda: m.start_bind(c, {w['arq']: {
            'hostname': 'node1', 'device_rp_uuid': w['rp'],
            'instance_uuid': str(uuid.uuid4()), 'project_id': 'p2'}},
            lambda *args: None, owner='ctl'),
    'arq_moves.give_back':
        lambda m, c, w: lambda: m.give_back(c, {w['arq']: 'p1'}),
    'arqs.create_for_attach':
        lambda m, c, w: lambda: m.create_for_attach(c, 'p1'),
    'arqs.create': lambda m, c, w: lambda: m.create(c, 'dp-1', 'p1'),
    'arqs.start_bind':
        lambda m, c, w: lambda: m.start_bind(c, {w['arq']: {
            'hostname': 'node1', 'device_rp_uuid': w['rp'],
            'instance_uuid': str(uuid.uuid4())}}, owner='ctl'),
    'arqs.start_bind_on':
        lambda m, c, w: lambda: m.start_bind_on(
            c, w['arq'], str(uuid.uuid4()), w['deployable'].uuid, 'ctl'),
    'arqs.bind_without_handle':
        lambda m, c, w: lambda: m.bind_without_handle(c, w['arq'],
                                                      str(uuid.uuid4())),
    'arqs.finish_bind':
        lambda m, c, w: lambda: m.finish_bind(c, w['arq'], True),
    'arqs.unbind': lambda m, c, w: lambda: m.unbind(c, [w['arq']]),
    'arqs.delete': lambda m, c, w: lambda: m.delete(c, [w['arq']]),
    'attributes.insert':
        lambda m, c, w: lambda: m.insert(c, w['deployable'].id, 'k2', 'v',
                                         lambda row: row.key),
    'attributes.remove':
        lambda m, c, w: lambda: m.remove(c, w['attribute'],
                                         lambda key: False),
    'claims._claim':
        lambda m, c, w: lambda: m._claim(c, [w['device']], 'program', 'ctl'),
    'claims.release':
        lambda m, c, w: lambda: m.release(c, [w['device']], 'program',
                                          'ctl'),
    'claims.clear_stale':
        lambda m, c, w: lambda: m.clear_stale(c, 'cyborg-conductor', 60),
    'claims.clear_forgotten':
        lambda m, c, w: lambda: m.clear_forgotten(c, 'ctl', set(), 60),
    'deployables.set_bitstream':
        lambda m, c, w: lambda: m.set_bitstream(c, w['deployable'].uuid,
                                                str(uuid.uuid4())),
    'device_health.release':
        lambda m, c, w: lambda: m.release(c, w['device']),
    'device_health.recover':
        lambda m, c, w: lambda: m.recover(c, 'cyborg-agent', 3),
    'devices.swap_status':
        lambda m, c, w: lambda: m.swap_status(
            c, w['device'], states.DEVICE_READY, states.DEVICE_MAINTAINING),
    'devices.reset_activations':
        lambda m, c, w: lambda: m.reset_activations(c, 60),
    'drains.start': lambda m, c, w: lambda: m.start(c, w['device']),
    'drains.settle': lambda m, c, w: lambda: m.settle(c),
    'inventory.apply_together':
        lambda m, c, w: lambda: m.apply_together(c, [], lambda *a: None),
    'modes.start':
        lambda m, c, w: lambda: m.start(c, w['device'], 'vgpu:a'),
    'modes.finish':
        lambda m, c, w: lambda: m.finish(c, w['device'],
                                         (states.DEVICE_READY, None)),
    'orphans.remove': lambda m, c, w: lambda: m.remove(c, 3600),
    'ownership.take':
        lambda m, c, w: lambda: m.take(c, w['arq'], 'ctl-a', 'ctl-b'),
    'ownership.claim': lambda m, c, w: lambda: m.claim(c, w['arq'], 'ctl'),
    'ownership.finish_unbind':
        lambda m, c, w: lambda: m.finish_unbind(c, [w['arq']], 'ctl'),
    'ownership.told': lambda m, c, w: lambda: m.told(c, [w['arq']], 'ctl'),
    'ownership.retry_later':
        lambda m, c, w: lambda: m.retry_later(c, [w['arq']], 'ctl'),
    'query.Resource.create':
        lambda m, c, w: lambda: dbapi.device_profiles.create(c, {
            'name': 'dp-2', 'profile_json': '{"groups": []}'}),
    'query.Resource.update':
        lambda m, c, w: lambda: dbapi.device_profiles.update(
            c, w['profile'], {'description': 'd'}),
    'query.Resource.destroy':
        lambda m, c, w: (lambda arq: lambda: dbapi.accelerator_requests
                         .destroy(c, arq))(_new_arq(c)),
    'scrubs.claim': lambda m, c, w: lambda: m.claim(c, 'ctl', 60),
    'scrubs.finish': lambda m, c, w: lambda: m.finish(c, _job()),
    'scrubs.fail': lambda m, c, w: lambda: m.fail(c, _job(), 'reason'),
    'scrubs.put_back': lambda m, c, w: lambda: m.put_back(c, _job()),
    'services.heartbeat':
        lambda m, c, w: lambda: m.heartbeat(c, 'ctl', 'cyborg-conductor',
                                            clock_skew=0.5),
    'services.agent_heartbeats':
        lambda m, c, w: lambda: m.agent_heartbeats(c, m.AGENT_BINARY,
                                                   {'node1': None}),
    'services.record_reports':
        lambda m, c, w: lambda: m.record_reports(c, m.AGENT_BINARY, {
            'node2': (m.ABSENT, {'report_generation': 1})}),
    'services.record_drivers':
        lambda m, c, w: lambda: m.record_drivers(
            c, 'node1', m.AGENT_BINARY, ['fake_driver'], []),
}


def test_every_writer_has_a_call_below():
    assert sorted(set(WRITERS) - set(CALLS)) == [], (
        'add a call of each new write function to CALLS')


class _Commits:
    """Session.commit, failing its first call as a certification failure
    does, before anything is committed."""

    def __init__(self, real):
        self.real = real
        self.count = 0

    def __call__(self, session_self, *args, **kwargs):
        self.count += 1
        if self.count == 1:
            raise db_exc.DBDeadlock()
        return self.real(session_self, *args, **kwargs)


@pytest.mark.parametrize('name', sorted(CALLS))
def test_a_deadlock_at_commit_is_retried(name, world, ctx, monkeypatch):
    module = importlib.import_module('cyborg.db.%s' % name.split('.')[0])
    call = CALLS[name](module, ctx, world)
    commits = _Commits(orm.Session.commit)
    monkeypatch.setattr(orm.Session, 'commit',
                        lambda self, *a, **kw: commits(self, *a, **kw))
    call()
    assert commits.count == 2


def test_only_the_outermost_transaction_is_run_again(db, ctx):
    calls, conflicts = [], [db_exc.DBDeadlock()]

    @session.retry_on_conflict
    @session.main.writer
    def inner(context):
        calls.append('inner')
        if conflicts:
            raise conflicts.pop()

    @session.retry_on_conflict
    @session.main.writer
    def outer(context):
        calls.append('outer')
        inner(context)

    outer(ctx)
    # NOTE(tests): the deadlock ended outer's transaction; inner running
    # again alone would have written half of it.
    assert calls == ['outer', 'inner', 'outer', 'inner']
