"""The database the API fuzzing runs over, and the requests it sends."""


import json
import threading
import uuid

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




class World:
    """Seeded objects, their ids, and the database to go back to."""

    def __init__(self, api, engine):
        self.api = api
        self.engine = engine
        self.snapshot = None
        self.ids = {}
        self._pending = 0
        self._idle = threading.Condition()

    def take_snapshot(self):
        with self.engine.begin() as conn:
            self.snapshot = [(table, [dict(row) for row in conn.execute(
                table.select()).mappings()])
                for table in models.Base.metadata.sorted_tables]

    def restore(self):
        # NOTE(tests): every example starts from the same database, so a
        # failure replays and shrinks the same way.
        self.settle()
        with self.engine.begin() as conn:
            for table, _rows in reversed(self.snapshot):
                conn.execute(table.delete())
            for table, rows in self.snapshot:
                if rows:
                    conn.execute(table.insert(), rows)

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


def seeded(api, db, ctx, glance, make_device, make_deployable,
            monkeypatch, stack):
    state = World(api, db)
    cast = conductor_rpcapi.ConductorAPI.finish_binds
    finish = conductor_manager.ConductorManager.finish_binds

    def counted_cast(self, *args, **kwargs):
        state.cast_started()
        try:
            return cast(self, *args, **kwargs)
        except BaseException:
            state.cast_done()
            raise

    def counted_finish(self, *args, **kwargs):
        try:
            return finish(self, *args, **kwargs)
        finally:
            state.cast_done()

    monkeypatch.setattr(conductor_rpcapi.ConductorAPI, 'finish_binds',
                        counted_cast)
    monkeypatch.setattr(conductor_manager.ConductorManager, 'finish_binds',
                        counted_finish)

    stack('node1').report()
    agent_devices = dbapi.devices.list(ctx)
    api.post('/v2/devices/%s/activate' % agent_devices[0].uuid,
             headers=V24, status=200)
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
    instances = [str(uuid.uuid4()) for _ in range(3)]
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
    state.settle()

    devices = dbapi.devices.list(ctx)
    deployables = dbapi.deployables.list(ctx)
    profiles = dbapi.device_profiles.list(ctx)
    state.ids = {
        'devices': [d.uuid for d in devices],
        'deployables': [d.uuid for d in deployables],
        'device_profiles': [p.uuid for p in profiles],
        'accelerator_requests': [
            a.uuid for a in dbapi.accelerator_requests.list(ctx)],
        'attributes': [a.uuid for a in dbapi.attributes.list(ctx)],
        'agents': ['node1'],
        'profile_names': [p.name for p in profiles],
        'names': ([p.name for p in profiles] +
                  [d.name for d in deployables] + ['node1', 'missing']),
        'rp_uuids': [d.rp_uuid for d in deployables],
        'instances': instances,
        'int_ids': [d.id for d in deployables] + [0, -1, 2 ** 31,
                                                  2 ** 63],
        'images': images + [fuzz_strategies.MISSING[1]],
    }
    # NOTE(tests): in a fixed order, so that a seed draws the same kinds
    # of ids in every run.
    state.ids['any'] = [i for key in fuzz_strategies.COLLECTIONS
                        for i in state.ids[key]]
    state.requests = fuzz_strategies.requests(state)
    state.take_snapshot()
    yield state
    state.settle()


def _create_arqs(api, profile, headers):
    return [arq['uuid'] for arq in _create(api, profile, headers)]


def _bind(api, arqs, rp_uuid, instance):
    api.patch_json(URL, {u: _bind_ops(rp_uuid, instance) for u in arqs},
                   headers=NOVA, status=202)
    _wait_resolved(api, instance)
