"""Explaining a device profile: each check, in order, on a fake Placement."""

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import explain
from cyborg.conductor import inventory
from cyborg.conductor.bind import store as arq_store
from cyborg.db import api as dbapi
from cyborg.db import models
from cyborg.db import services as service_db
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import report
from cyborg.objects import device_profile as profile_obj
from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts

HOST = 'node1'


class FakePlacement:
    """What explain asks of Placement: candidates, traits, inventories and
    usages, per provider; records the candidate queries."""

    def __init__(self):
        self.traits = {}
        self.inventories = {}
        self.usages = {}
        self.offered = set()
        self.queries = []

    def candidate_providers(self, resources, required=(), member_of=None):
        self.queries.append((resources, list(required), member_of))
        return set(self.offered)

    def get_traits(self, uuid):
        return 1, set(self.traits.get(uuid, ()))

    def get_inventories(self, uuid):
        return 1, self.inventories.get(uuid, {})

    def get_usages(self, uuid):
        return self.usages.get(uuid, {})


@pytest.fixture
def cloud(db, ctx, override):
    """Two fake FPGA cards (two units each), ready, with providers that
    Placement offers and an agent that reports."""
    override('device_count', 2, group='fake_driver')
    override('accelerators_per_device', 2, group='fake_driver')
    inventory.apply_report(ctx, report.HostReport(
        host=HOST, devices=fake.FakeDriver().discover(
            base.DiscoveryContext(HOST))))
    placement = FakePlacement()
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(
            status=states.DEVICE_READY, health=states.HEALTH_OK))
        for dep_id, in conn.execute(sa.select(models.Deployable.id)):
            rp = uuidutils.generate_uuid()
            conn.execute(sa.update(models.Deployable)
                         .where(models.Deployable.id == dep_id)
                         .values(rp_uuid=rp))
            placement.offered.add(rp)
            placement.traits[rp] = {'CUSTOM_FAKE_DEVICE'}
            placement.inventories[rp] = {'FPGA': {'total': 2,
                                                  'reserved': 0}}
    service_db.heartbeat(ctx, HOST, inventory.AGENT_BINARY)
    _profiles(ctx)
    return placement


def _profiles(ctx):
    for name, groups in (
            ('fpga', [{'resources:FPGA': '1'}]),
            ('nope', [{'resources:FPGA': '1',
                       'trait:CUSTOM_NOPE': 'required'}]),
            ('not-fake', [{'resources:FPGA': '1',
                           'trait:CUSTOM_FAKE_DEVICE': 'forbidden'}]),
            ('two-groups', [{'resources:FPGA': '2'},
                            {'resources:VGPU': '1'}])):
        profile_obj.DeviceProfile(ctx, uuid=uuidutils.generate_uuid(),
                                  name=name, groups=groups).create()


def _first(ctx, placement, profile='fpga', project='p1', member_of=None):
    body = explain.explain(ctx, profile, project, member_of,
                           client=placement)
    return body, [(c['reason'], c['detail'])
                  for c in body['groups'][0]['candidates']]


def _set(db, table, values, where=None):
    with db.begin() as conn:
        stmt = sa.update(table).values(**values)
        if where is not None:
            stmt = stmt.where(where)
        conn.execute(stmt)


def test_every_card_serves_when_all_is_well(cloud, ctx):
    body, reasons = _first(ctx, cloud)
    assert reasons == [(None, None), (None, None)]
    assert body['device_profile']['name'] == 'fpga'
    (group,) = body['groups']
    assert (group['resources'], group['required']) == ({'FPGA': 1}, [])
    assert cloud.queries == [({'FPGA': 1}, [], None)]
    assert all(c['schedulable'] and c['hostname'] == HOST
               for c in group['candidates'])


def test_by_uuid_too_and_an_unknown_profile(cloud, ctx):
    uuid = profile_obj.DeviceProfile.get_by_name(ctx, 'fpga').uuid
    assert explain.explain(ctx, uuid, 'p1', client=cloud)[
        'device_profile'] == {'uuid': uuid, 'name': 'fpga'}
    with pytest.raises(exception.DeviceProfileNotFound):
        explain.explain(ctx, 'no-such', 'p1', client=cloud)


def test_each_group_has_its_own_query(cloud, ctx):
    body = explain.explain(ctx, 'two-groups', 'p1', client=cloud)
    assert [g['resources'] for g in body['groups']] == [{'FPGA': 2},
                                                       {'VGPU': 1}]
    assert [q[0] for q in cloud.queries] == [{'FPGA': 2}, {'VGPU': 1}]
    assert {c['reason'] for c in body['groups'][1]['candidates']} == {
        'resource_class'}


def test_traits_as_placement_holds_them(cloud, ctx):
    cloud.offered.clear()
    _body, reasons = _first(ctx, cloud, 'nope')
    assert set(reasons) == {('trait_missing', 'it lacks CUSTOM_NOPE')}
    assert cloud.queries[-1][1] == ['CUSTOM_NOPE']
    _body, reasons = _first(ctx, cloud, 'not-fake')
    assert set(reasons) == {('trait_forbidden',
                             'it has CUSTOM_FAKE_DEVICE')}
    assert cloud.queries[-1][1] == ['!CUSTOM_FAKE_DEVICE']


def test_the_first_failing_check_wins(cloud, ctx, db, override):
    """Everything wrong at once, then put right one at a time: each time
    the next reason in REASONS order shows."""
    override('limits', {'FPGA': '0'}, group='quota')
    cloud.offered.clear()
    for rp in cloud.inventories:
        cloud.usages[rp] = {'FPGA': 2}
    _set(db, models.Device, {'health': states.HEALTH_FAILED,
                             'health_reason': 'AER: 1 fatal error',
                             'status': states.DEVICE_DRAINING,
                             'status_reason': 'draining: 1 left'})
    _set(db, models.Deployable, {'cleaning_since': sa.func.now()})
    _set(db, models.Service, {'last_seen_up': None})
    seen = []

    def first():
        return _first(ctx, cloud)[1][0]

    seen.append(first())
    _set(db, models.Device, {'health': states.HEALTH_OK})
    seen.append(first())
    _set(db, models.Device, {'status': states.DEVICE_MAINTAINING,
                             'status_reason': 'maintenance; was ready'})
    seen.append(first())
    _set(db, models.Device, {'status': states.DEVICE_READY,
                             'status_reason': None})
    seen.append(first())
    _set(db, models.Deployable, {'cleaning_since': None})
    seen.append(first())
    service_db.heartbeat(ctx, HOST, inventory.AGENT_BINARY)
    seen.append(first())
    cloud.usages.clear()
    seen.append(first())
    override('limits', {}, group='quota')
    seen.append(first())
    assert seen == [
        ('health_failed', 'AER: 1 fatal error'),
        ('draining', 'draining: 1 left'),
        ('device_not_ready',
         'its device is maintaining: maintenance; was ready'),
        ('cleaning', 'it is being scrubbed for its next tenant'),
        ('agent_down', 'the cyborg-agent of node1 does not report'),
        ('no_capacity', 'used 2 of 2 (0 reserved); the group asks for 1'),
        ('quota_exhausted',
         'class:FPGA: limit 0, the project uses 0 and asks for 1'),
        ('not_offered', 'Placement offers no allocation on it for this '
                        'group'),
    ]
    assert [reason for reason, _detail in seen] == [
        reason for reason in explain.REASONS
        if reason in {r for r, _d in seen}]


def test_reserved_capacity_counts(cloud, ctx):
    cloud.offered.clear()
    for rp in cloud.inventories:
        cloud.inventories[rp]['FPGA']['reserved'] = 2
    _body, reasons = _first(ctx, cloud)
    assert set(reasons) == {
        ('no_capacity', 'used 0 of 2 (2 reserved); the group asks for 1')}


def test_quota_is_the_callers(cloud, ctx, override):
    override('limits', {'FPGA': '1'}, group='quota')
    arq_store.create(ctx, 'fpga', 'p1')
    assert set(_first(ctx, cloud, project='p1')[1]) == {
        ('quota_exhausted',
         'class:FPGA: limit 1, the project uses 1 and asks for 1')}
    assert set(_first(ctx, cloud, project='p2')[1]) == {(None, None)}


def test_member_of_goes_to_placement(cloud, ctx):
    aggregate = uuidutils.generate_uuid()
    cloud.offered.clear()
    body, reasons = _first(ctx, cloud, member_of='in:' + aggregate)
    assert body['member_of'] == 'in:' + aggregate
    assert cloud.queries[-1][2] == 'in:' + aggregate
    assert set(reasons) == {(
        'not_offered', 'Placement offers no allocation on it for this '
                       'group (member_of=in:%s)' % aggregate)}


def test_a_deployable_without_a_provider(cloud, ctx, db):
    _set(db, models.Deployable, {'rp_uuid': None})
    assert set(_first(ctx, cloud)[1]) == {
        ('not_offered', 'it has no resource provider in Placement yet')}


def test_without_placement_configured_it_is_a_503(cloud, ctx, override):
    override('auth_type', None, group='placement')
    with pytest.raises(exception.PlacementUnavailable) as caught:
        explain.explain(ctx, 'fpga', 'p1')
    assert '[placement] is not configured on the conductor' in (
        caught.value.message)


def test_a_conductor_given_a_placement_client_asks_it(cloud, ctx, override):
    """cyborg-all-in-one hands its conductor the embedded Placement's
    client; [placement] is then not needed."""
    from cyborg.conductor import manager

    override('auth_type', None, group='placement')
    conductor = manager.ConductorManager('ctl', placement=cloud)
    body = conductor.explain_profile(ctx, 'fpga', 'p1')
    assert cloud.queries == [({'FPGA': 1}, [], None)]
    assert {c['reason'] for c in body['groups'][0]['candidates']} == {None}


def _report_gpus(ctx, host, override):
    """``host``'s nvidia-host GPUs with nvidia-223 enabled: the T4 that
    holds a vGPU of nvidia-222 offers nothing, and says why."""
    override('enabled_vgpu_types', ['nvidia-223'], group='gpu_devices')
    devices = nvidia_gpu.NvidiaGpuDriver().discover(base.DiscoveryContext(
        host, sysfs_root=pci_hosts.committed(nv.NAME)))
    inventory.apply_report(ctx, report.HostReport(host=host,
                                                  devices=devices))
    (busy,) = [d for d in devices if not d.deployables]
    return busy


def test_devices_that_offer_nothing_follow_the_deployables(cloud, ctx,
                                                           override):
    busy = _report_gpus(ctx, 'gpu1', override)
    (device,) = [d for d in dbapi.devices.list(ctx)
                 if d.hostname == 'gpu1' and not dbapi.deployables.list(
                     ctx, filters={'device_id': d.id})]
    for profile in ('fpga', 'two-groups'):
        body = explain.explain(ctx, profile, 'p1', client=cloud)
        for group in body['groups']:
            *deployables, last = group['candidates']
            assert all(c['deployable_uuid'] for c in deployables)
            assert last == {
                'deployable_uuid': None, 'deployable_name': None,
                'device_uuid': device.uuid, 'hostname': 'gpu1',
                'resource_class': None, 'rp_uuid': None,
                'schedulable': False, 'reason': 'device_offers_nothing',
                'detail': busy.offer_reason}
    assert busy.offer_reason.startswith('it holds vGPUs of nvidia-222')
    # Its reason is the last of REASONS: no deployable check comes after.
    assert explain.REASONS[-1] == 'device_offers_nothing'


def test_a_device_without_a_reason_recorded(cloud, ctx, db, override):
    # NOTE(tests): a row reported before offer reasons existed.
    _report_gpus(ctx, 'gpu1', override)
    _set(db, models.Device, {'offer_reason': None})
    (last,) = [c for c in _first(ctx, cloud)[0]['groups'][0]['candidates']
               if c['deployable_uuid'] is None]
    assert (last['reason'], last['detail']) == (
        'device_offers_nothing', 'it has no deployable, and its agent has '
        'not said why (an agent older than offer reasons)')
