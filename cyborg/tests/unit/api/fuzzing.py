"""The database the API fuzzing runs over, and the requests it sends."""


import copy
import json
import threading
import uuid

import sqlalchemy as sa

from cyborg import states
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as dbapi
from cyborg.db import models
from cyborg.tests.unit.api import fuzz_strategies
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.test_arqs import MEMBER
from cyborg.tests.unit.api.test_arqs import NOVA
from cyborg.tests.unit.api.test_arqs import OTHER
from cyborg.tests.unit.api.test_arqs import URL
from cyborg.tests.unit.api.test_arqs import _bind_ops
from cyborg.tests.unit.api.test_arqs import _create
from cyborg.tests.unit.api.test_arqs import _wait_resolved

V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
V25 = {'OpenStack-API-Version': 'accelerator 2.5'}
ACCELERATORS = fuzz_strategies.ACCELERATORS
MANAGER = fuzz_strategies.MANAGER
# NOTE(tests): the operators' accelerators (no agent sees them): one
# attached to an instance, one to the agent's host, one free.
CARD = '6a0c6f5e-3f5d-4d0a-9a57-3c1f0e5b7d21'
RACK = '0f3e2d1c-7b6a-4e5f-8d9c-1a2b3c4d5e6f'
SPARE = 'c4b5a6d7-e8f9-4a0b-9c1d-2e3f4a5b6c7d'
# NOTE(tests): what an agent keeps between requests besides its driver
# objects; it is restored with the database.
_AGENT_STATE = ('_found', '_current', 'last_result', '_backoff',
                '_heal_due')


# NOTE(tests): statements that change no row; any other is a write.
_READS = frozenset(['SELECT', 'BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT',
                    'RELEASE', 'PRAGMA'])


class World:
    """Seeded objects, their ids, and the database (and agent) to go back
    to."""

    def __init__(self, api, engine):
        self.api = api
        self.engine = engine
        self.snapshot = None
        self.agents = []
        self.agent_snapshot = []
        self.ids = {}
        self.written = True
        self._pending = 0
        self._idle = threading.Condition()

    def watch_writes(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._seen)

    def stop_watching(self):
        sa.event.remove(self.engine, 'before_cursor_execute', self._seen)

    def _seen(self, conn, cursor, statement, *args):
        words = statement.split(None, 1)
        if not words or words[0].upper() not in _READS:
            self.written = True

    def take_snapshot(self):
        with self.engine.begin() as conn:
            self.snapshot = [(table, [dict(row) for row in conn.execute(
                table.select()).mappings()])
                for table in models.Base.metadata.sorted_tables]
        self.agent_snapshot = [(agent, _agent_state(agent))
                               for agent in self.agents]

    def restore(self):
        # NOTE(tests): every example starts from the same database, so a
        # failure replays and shrinks the same way. Most examples write
        # nothing (their requests are refused), and only the others pay
        # for putting it back.
        self.settle()
        if self.written:
            with self.engine.begin() as conn:
                for table, _rows in reversed(self.snapshot):
                    conn.execute(table.delete())
                for table, rows in self.snapshot:
                    if rows:
                        conn.execute(table.insert(), rows)
            self.written = False
        # NOTE(tests): and the same agent: drivers installed, uninstalled
        # or rebuilt by an example are put back, and so is what it last
        # found and reported.
        for agent, state in self.agent_snapshot:
            _set_agent_state(agent, state)

    def cast_started(self):
        with self._idle:
            self._pending += 1

    def cast_done(self):
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    def settle(self, timeout=30):
        # NOTE(tests): binds finish in the conductor after the API's 202;
        # the next example must not restore the tables under them.
        with self._idle:
            assert self._idle.wait_for(lambda: self._pending == 0,
                                       timeout), 'binds still running'


def _agent_state(agent):
    return {'drivers': dict(agent.tracker.drivers),
            'installed': list(agent.driver_choices.installed),
            'uninstalled': list(agent.driver_choices.uninstalled),
            'cache': copy.deepcopy((agent.cache.generation,
                                    agent.cache.devices)),
            'fields': copy.deepcopy({name: getattr(agent, name)
                                     for name in _AGENT_STATE})}


def _set_agent_state(agent, state):
    agent.tracker.drivers = dict(state['drivers'])
    agent.driver_choices.installed = list(state['installed'])
    agent.driver_choices.uninstalled = list(state['uninstalled'])
    agent.cache.generation, agent.cache.devices = copy.deepcopy(
        state['cache'])
    for name, value in copy.deepcopy(state['fields']).items():
        setattr(agent, name, value)


def seeded(api, db, ctx, glance, make_device, make_deployable,
            monkeypatch, stack):
    state = World(api, db)
    cast = conductor_rpcapi.ConductorAPI.finish_binds
    finish = conductor_manager.ConductorManager.finish_binds
    attach = conductor_manager.ConductorManager.attach_accelerator
    local = threading.local()

    def counted_cast(self, *args, **kwargs):
        state.cast_started()
        try:
            return cast(self, *args, **kwargs)
        except BaseException:
            state.cast_done()
            raise

    def counted_finish(self, *args, **kwargs):
        # NOTE(tests): a /v1 attach to an instance finishes its bind in
        # the conductor's own call, with no cast to count.
        if getattr(local, 'attaching', False):
            return finish(self, *args, **kwargs)
        try:
            return finish(self, *args, **kwargs)
        finally:
            state.cast_done()

    def attach_in_call(self, *args, **kwargs):
        local.attaching = True
        try:
            return attach(self, *args, **kwargs)
        finally:
            local.attaching = False

    monkeypatch.setattr(conductor_rpcapi.ConductorAPI, 'finish_binds',
                        counted_cast)
    monkeypatch.setattr(conductor_manager.ConductorManager, 'finish_binds',
                        counted_finish)
    monkeypatch.setattr(conductor_manager.ConductorManager,
                        'attach_accelerator', attach_in_call)

    agent = stack('node1')
    state.agents.append(agent)
    agent.report()
    agent_devices = dbapi.devices.list(ctx)
    # NOTE(tests): the first device holds Nova's binds, the second stays
    # inactive, the third is free for /v1 attaches and the fourth is
    # attached through /v1.
    for device in (agent_devices[0], agent_devices[2], agent_devices[3]):
        api.post('/v2/devices/%s/activate' % device.uuid, headers=V24,
                 status=200)
    extra = make_device(hostname='node1', status=states.DEVICE_MAINTAINING,
                        status_reason='maintenance; was ready',
                        driver_name='fake')
    cpid = dbapi.controlpath_ids.create(ctx, {
        'device_id': extra.id, 'cpid_type': 'PCI',
        'cpid_info': json.dumps({'bus': 'f0', 'device': '00',
                                 'domain': '0000', 'function': '0'},
                                sort_keys=True)})
    made = make_deployable(device=extra, rp_uuid=str(uuid.uuid4()),
                           attributes=[('rc', 'FPGA'),
                                       ('trait0', 'CUSTOM_FAKE_DEVICE')])
    for function in range(2):
        dbapi.attach_handles.create(ctx, {
            'deployable_id': made.id, 'cpid_id': cpid.id,
            'attach_type': 'TEST_PCI', 'in_use': False,
            'attach_info': json.dumps({'bus': 'f0', 'device': '00',
                                       'domain': '0000',
                                       'function': str(function)})})

    images = [glance.add(), glance.add(**{'accel:function_id': 'fn-1'})]
    for name, groups in (
            ('two', [{'resources:FPGA': '2'}]),
            ('split', [{'resources:FPGA': '2'}, {'resources:FPGA': '1'}]),
            ('programmed', [{'resources:FPGA': '1',
                             'trait:CUSTOM_FAKE_DEVICE': 'required',
                             'accel:bitstream_id': images[0]}]),
            ('function', [{'resources:FPGA': '1',
                           'accel:function_id': 'fn-1'}]),
            ('unused', [{'resources:CUSTOM_QAT': '1'}])):
        api.post_json('/v2/device_profiles', [{'name': name,
                                               'groups': groups}],
                      headers=ADMIN, status=201)

    rp_uuid = dbapi.deployables.list(ctx)[0].rp_uuid
    instances = [str(uuid.uuid4()) for _ in range(5)]
    bound = _create_arqs(api, 'two', MEMBER)
    _bind(api, bound, rp_uuid, instances[0])
    _create_arqs(api, 'split', MEMBER)
    _create_arqs(api, 'programmed', MEMBER)
    started, failed = _create_arqs(api, 'two', OTHER)
    dbapi.accelerator_requests.update(ctx, started, {
        'state': states.ARQ_BIND_STARTED, 'instance_uuid': instances[1],
        'hostname': 'node1', 'device_rp_uuid': rp_uuid})
    dbapi.accelerator_requests.update(ctx, failed, {
        'state': states.ARQ_BIND_FAILED, 'instance_uuid': instances[1],
        'hostname': 'node1', 'device_rp_uuid': rp_uuid})
    unbound = _create_arqs(api, 'two', MEMBER)
    _bind(api, unbound, rp_uuid, instances[2])
    api.patch_json(URL, {u: fuzz_strategies.UNBIND for u in unbound},
                   headers=NOVA, status=202)
    attached = _seed_accelerators(api, ctx, agent_devices[3], instances)
    # NOTE(tests): a second driver, installed as an operator would and
    # free to uninstall (the fake driver's devices are bound).
    api.post_json('/v2/drivers', {'host': 'node1', 'name': 'pci_driver'},
                  headers=dict(ADMIN, **V25), status=201)
    state.settle()

    devices = dbapi.devices.list(ctx)
    deployables = dbapi.deployables.list(ctx)
    profiles = dbapi.device_profiles.list(ctx)
    operators = [CARD, RACK, SPARE]
    state.ids = {
        'devices': [d.uuid for d in devices],
        'deployables': [d.uuid for d in deployables],
        'device_profiles': [p.uuid for p in profiles],
        'accelerator_requests': [
            a.uuid for a in dbapi.accelerator_requests.list(ctx)],
        'attributes': [a.uuid for a in dbapi.attributes.list(ctx)],
        'agents': ['node1'],
        'accelerators': [d.uuid for d in deployables] + operators,
        'attached': [attached] + operators[:2],
        'drivers': list(fuzz_strategies.DRIVERS),
        'profile_names': [p.name for p in profiles],
        'names': ([p.name for p in profiles] +
                  [d.name for d in deployables] +
                  ['fuzz-card', 'fuzz-rack', 'fuzz-spare'] +
                  list(fuzz_strategies.DRIVERS) + ['node1', 'missing']),
        'rp_uuids': [d.rp_uuid for d in deployables],
        'instances': instances,
        'int_ids': [d.id for d in deployables] + [0, -1, 2 ** 31,
                                                  2 ** 63],
        'images': images + [fuzz_strategies.MISSING[1]],
    }
    # NOTE(tests): in a fixed order, so that a seed draws the same kinds
    # of ids in every run.
    state.ids['any'] = [i for key in fuzz_strategies.KINDS
                        for i in state.ids[key]]
    state.requests = fuzz_strategies.requests(state)
    state.take_snapshot()
    state.watch_writes()
    try:
        yield state
        state.settle()
    finally:
        state.stop_watching()


def _seed_accelerators(api, ctx, device, instances):
    """Operators' accelerators, one attached to an instance and one to
    the host, and a discovered one attached to an instance; returns the
    uuid of that one."""
    for name, uuid_ in (('fuzz-card', CARD), ('fuzz-rack', RACK),
                        ('fuzz-spare', SPARE)):
        api.post_json(ACCELERATORS, {'name': name, 'uuid': uuid_},
                      headers=ADMIN, status=201)
    api.put_json('%s/%s/acc_specs' % (ACCELERATORS, SPARE),
                 {'acc_specs': {'remote': 1, 'num': 2,
                                'device_type': 'CRYPTO',
                                'acc_capability': {'ipsec': {'aes': 1}}}},
                 headers=dict(ADMIN, **{'If-Match': '"1"'}), status=200)
    api.put_json('%s/%s' % (ACCELERATORS, CARD),
                 {'instance_uuid': instances[3]}, headers=MANAGER,
                 status=200)
    api.put_json('%s/%s' % (ACCELERATORS, RACK), {'host': 'node1'},
                 headers=ADMIN, status=200)
    (deployable,) = [d for d in dbapi.deployables.list(ctx)
                     if d.device_id == device.id]
    api.put_json('%s/%s' % (ACCELERATORS, deployable.uuid),
                 {'instance_uuid': instances[4]}, headers=MANAGER,
                 status=200)
    return deployable.uuid


def _create_arqs(api, profile, headers):
    return [arq['uuid'] for arq in _create(api, profile, headers)]


def _bind(api, arqs, rp_uuid, instance):
    api.patch_json(URL, {u: _bind_ops(rp_uuid, instance) for u in arqs},
                   headers=NOVA, status=202)
    _wait_resolved(api, instance)
