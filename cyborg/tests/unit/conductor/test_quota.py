"""Quotas on accelerator requests: flat limits, unified limits, recheck."""

from oslo_limit import fixture as limit_fixture
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.conductor import inventory
from cyborg.conductor import quota
from cyborg.conductor.bind import store as arq_store
from cyborg.db import arqs as arq_db
from cyborg.db import models
from cyborg.db import quota_usage
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.objects import deployable as deployable_obj
from cyborg.objects import device_profile as profile_obj
from cyborg.tests import arq_rows

P1 = 'p1'
P2 = 'p2'


def _profile(ctx, name, *groups):
    profile_obj.DeviceProfile(
        ctx, uuid=uuidutils.generate_uuid(), name=name,
        groups=[dict(group) for group in groups]).create()


@pytest.fixture
def profiles(db, ctx):
    _profile(ctx, 'fpga2', {'resources:FPGA': '2'})
    _profile(ctx, 'fpga1-vgpu1', {'resources:FPGA': '1'},
             {'resources:VGPU': '1', 'trait:CUSTOM_A': 'required'})
    _profile(ctx, 'mixed', {'resources:FPGA': '1', 'resources:VGPU': '2'})
    return ctx


def _count(db, project=None):
    with db.connect() as conn:
        query = sa.select(sa.func.count()).select_from(
            models.AcceleratorRequest)
        if project is not None:
            query = query.where(models.AcceleratorRequest.project_id ==
                                project)
        return conn.execute(query).scalar()


def test_demand_of_a_profile(profiles, ctx):
    assert quota_usage.profile_demand(ctx, 'fpga1-vgpu1') == {
        'FPGA': 1, 'VGPU': 1}
    assert quota_usage.profile_demand(ctx, 'mixed') == {'FPGA': 1, 'VGPU': 2}
    with pytest.raises(exception.DeviceProfileNotFound):
        quota_usage.profile_demand(ctx, 'none')


def test_usage_counts_a_unit_per_arq_per_class(profiles, ctx):
    arq_store.create(ctx, 'fpga2', P1)
    arq_store.create(ctx, 'fpga1-vgpu1', P1)
    arq_store.create(ctx, 'mixed', P1)
    arq_store.create(ctx, 'fpga2', P2)
    assert quota_usage.usage(ctx, P1) == {'FPGA': 4, 'VGPU': 3}
    assert quota_usage.usage(ctx, P2) == {'FPGA': 2}
    assert quota_usage.usage(ctx, 'p3') == {}


def test_usage_counts_a_v1_attach_by_its_deployable_class(db, ctx):
    inventory.apply_report(ctx, report.HostReport(
        host='node1', devices=fake.FakeDriver().discover(
            base.DiscoveryContext('node1'))))
    (deployable,) = deployable_obj.Deployable.list(ctx)
    uuid = arq_db.create_for_attach(ctx, P1)
    with db.begin() as conn:
        conn.execute(sa.update(models.AcceleratorRequest)
                     .where(models.AcceleratorRequest.uuid == uuid)
                     .values(deployable_id=deployable.id,
                             state=states.ARQ_BOUND))
    # NOTE(tests): an attach takes the whole deployable (Placement
    # reserves all of it), so it holds all of its units.
    assert deployable.num_accelerators > 1
    assert quota_usage.usage(ctx, P1) == {
        'FPGA': deployable.num_accelerators}
    assert quota_usage.attach_demand(ctx, deployable.uuid) == {
        'FPGA': deployable.num_accelerators}
    assert quota_usage.attach_demand(ctx, uuidutils.generate_uuid()) == {}


def test_unlimited_by_default(profiles, ctx, db):
    for _ in range(5):
        arq_store.create(ctx, 'fpga2', P1)
    assert _count(db) == 10
    assert quota.limits(ctx, P1) == [
        {'resource': 'class:FPGA', 'resource_class': 'FPGA', 'limit': -1,
         'usage': 10}]


def test_flat_limits_refuse_what_would_go_over(profiles, ctx, db,
                                               override):
    override('limits', {'FPGA': '3', 'VGPU': '-1'}, group='quota')
    arq_store.create(ctx, 'fpga2', P1)
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.create(ctx, 'fpga2', P1)
    assert caught.value.message == (
        'Quota exceeded: class:FPGA has a limit of 3; project p1 uses 2 and '
        'asks for 2 more.')
    assert caught.value.kwargs['over'] == [
        {'resource': 'class:FPGA', 'limit': 3, 'usage': 2, 'requested': 2}]
    assert _count(db, P1) == 2
    # another project has its own count; an unlimited class is not judged
    arq_store.create(ctx, 'fpga2', P2)
    arq_store.create(ctx, 'fpga1-vgpu1', P1)
    assert quota.limits(ctx, P1) == [
        {'resource': 'class:FPGA', 'resource_class': 'FPGA', 'limit': 3,
         'usage': 3},
        {'resource': 'class:VGPU', 'resource_class': 'VGPU', 'limit': -1,
         'usage': 1}]


def test_every_limit_gone_over_is_named(profiles, ctx, override):
    override('limits', {'FPGA': '0', 'VGPU': '1'}, group='quota')
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.create(ctx, 'mixed', P1)
    assert [item['resource'] for item in caught.value.kwargs['over']] == [
        'class:FPGA', 'class:VGPU']


def test_the_403_survives_rpc(profiles, ctx, override):
    """What the API gets back from the conductor over oslo.messaging."""
    override('limits', {'FPGA': '1'}, group='quota')
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.create(ctx, 'fpga2', P1)
    remote = type(caught.value)(caught.value.message, **caught.value.kwargs)
    assert remote.message == caught.value.message
    assert remote.kwargs['over'] == caught.value.kwargs['over']


def _racing(monkeypatch, ctx, times=1):
    """arq_db.create writes a concurrent request's ARQs (same project)
    just before its own, as a second API call between the check and the
    write would."""
    real = arq_db.create
    raced = []

    def create(context, name, project_id, key=None):
        if len(raced) < times:
            raced.append(real(context, name, project_id))
        return real(context, name, project_id, key)

    monkeypatch.setattr(arq_db, 'create', create)
    return raced


def test_the_recheck_undoes_a_request_a_concurrent_one_overtook(
        profiles, ctx, db, override, monkeypatch):
    override('limits', {'FPGA': '3'}, group='quota')
    raced = _racing(monkeypatch, ctx)
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.create(ctx, 'fpga2', P1)
    assert caught.value.kwargs['over'] == [
        {'resource': 'class:FPGA', 'limit': 3, 'usage': 4, 'requested': 0}]
    # only the concurrent request's ARQs are left: never over the limit
    with db.connect() as conn:
        left = set(conn.execute(sa.select(
            models.AcceleratorRequest.uuid)).scalars())
    assert left == {values['uuid'] for values in raced[0]}


def test_without_the_recheck_concurrent_requests_overshoot(
        profiles, ctx, db, override, monkeypatch):
    override('limits', {'FPGA': '3'}, group='quota')
    override('recheck_quota', False, group='quota')
    _racing(monkeypatch, ctx)
    arq_store.create(ctx, 'fpga2', P1)
    assert _count(db, P1) == 4


def test_no_project_no_quota(profiles, ctx, override):
    override('limits', {'FPGA': '0'}, group='quota')
    assert len(arq_store.create(ctx, 'fpga2', None)) == 2


@pytest.fixture
def unified(override):
    """Keystone's unified limits, as oslo.limit's own fixture fakes them:
    FPGA 2 and VGPU unlimited for all, p2 may hold 5 FPGAs."""
    override('driver', 'unified_limits', group='quota')
    override('endpoint_id', 'cyborg-endpoint', group='oslo_limit')
    fixture = limit_fixture.LimitFixture(
        {'class:FPGA': 2, 'class:VGPU': -1}, {P2: {'class:FPGA': 5}})
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


def test_unified_limits_registered_and_per_project(profiles, ctx, db,
                                                   unified):
    arq_store.create(ctx, 'fpga2', P1)
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.create(ctx, 'fpga1-vgpu1', P1)
    assert caught.value.kwargs['over'] == [
        {'resource': 'class:FPGA', 'limit': 2, 'usage': 2, 'requested': 1}]
    arq_store.create(ctx, 'fpga2', P2)
    arq_store.create(ctx, 'fpga2', P2)
    with pytest.raises(exception.QuotaExceeded):
        arq_store.create(ctx, 'fpga2', P2)
    assert _count(db, P2) == 4
    assert quota.limits(ctx, P2) == [
        {'resource': 'class:FPGA', 'resource_class': 'FPGA', 'limit': 5,
         'usage': 4},
        {'resource': 'class:VGPU', 'resource_class': 'VGPU', 'limit': -1,
         'usage': 0}]


def test_a_class_without_a_registered_limit_has_none(profiles, ctx,
                                                     unified):
    _profile(ctx, 'qat', {'resources:CUSTOM_QAT': '1'})
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.create(ctx, 'qat', P1)
    assert caught.value.kwargs['over'][0]['limit'] == 0


def test_keystone_out_of_reach_is_a_503(profiles, ctx, override,
                                        monkeypatch):
    from oslo_limit import exception as limit_exception
    from oslo_limit import limit as oslo_limit

    override('driver', 'unified_limits', group='quota')

    def unreachable():
        raise limit_exception.SessionInitError('Unable to establish '
                                               'connection')

    monkeypatch.setattr(oslo_limit, '_get_keystone_connection', unreachable)
    with pytest.raises(exception.QuotaUnavailable) as caught:
        arq_store.create(ctx, 'fpga2', P1)
    assert 'Unable to establish connection' in caught.value.message


# --- Binds that move ARQs to another project (2.1's /project_id) ------------


@pytest.fixture
def deployable(db, ctx):
    inventory.apply_report(ctx, report.HostReport(
        host='node1', devices=fake.FakeDriver().discover(
            base.DiscoveryContext('node1'))))
    arq_rows.ready(db)
    (found,) = deployable_obj.Deployable.list(ctx)
    return found


def _moving(arqs, deployable, project):
    instance = uuidutils.generate_uuid()
    return {arq.uuid: {'hostname': 'node1',
                       'device_rp_uuid': deployable.rp_uuid,
                       'instance_uuid': instance, 'project_id': project}
            for arq in arqs}


def _arq_rows(db, arqs):
    with db.connect() as conn:
        return sorted(conn.execute(
            sa.select(models.AcceleratorRequest.state,
                      models.AcceleratorRequest.project_id,
                      models.AcceleratorRequest.attach_handle_id)
            .where(models.AcceleratorRequest.uuid.in_(
                [arq.uuid for arq in arqs]))).all())


def test_a_move_is_checked_against_the_receiving_project(
        profiles, deployable, ctx, db, override):
    override('limits', {'FPGA': '3'}, group='quota')
    arq_store.create(ctx, 'fpga2', P2)
    arqs = arq_store.create(ctx, 'fpga2', P1)
    before = _arq_rows(db, arqs)
    with pytest.raises(exception.QuotaExceeded) as caught:
        arq_store.start_bind(ctx, _moving(arqs, deployable, P2))
    assert caught.value.kwargs['over'] == [
        {'resource': 'class:FPGA', 'limit': 3, 'usage': 2, 'requested': 2}]
    assert caught.value.kwargs['project_id'] == P2
    # refused before anything was written: still Initial in p1, no handle
    assert _arq_rows(db, arqs) == before == [
        (states.ARQ_INITIAL, P1, None)] * 2
    # a project with room takes them, and the usage moves with them
    started, failed = arq_store.start_bind(ctx, _moving(arqs, deployable,
                                                        'p3'))
    assert (len(started), failed) == (2, [])
    assert quota_usage.usage(ctx, 'p3') == {'FPGA': 2}
    assert quota_usage.usage(ctx, P1) == {}


def test_a_bind_that_moves_nothing_is_not_checked(
        profiles, deployable, ctx, override):
    override('limits', {'FPGA': '2'}, group='quota')
    arqs = arq_store.create(ctx, 'fpga2', P1)
    # at its limit, p1 binds its own ARQs, naming its own project
    started, failed = arq_store.start_bind(ctx, _moving(arqs, deployable, P1))
    assert (len(started), failed) == (2, [])


def test_the_recheck_gives_back_a_move_a_concurrent_request_overtook(
        profiles, deployable, ctx, db, override, monkeypatch):
    override('limits', {'FPGA': '3'}, group='quota')
    arq_store.create(ctx, 'fpga2', P2)
    arqs = arq_store.create(ctx, 'fpga2', P1)
    real = quota.check
    calls = []

    def check(context, project_id, demand):
        # NOTE(tests): the first check passes, as it would have before a
        # concurrent request took the quota; the recheck is real.
        calls.append((project_id, dict(demand)))
        if len(calls) > 1:
            real(context, project_id, demand)

    monkeypatch.setattr(quota, 'check', check)
    with pytest.raises(exception.QuotaExceeded):
        arq_store.start_bind(ctx, _moving(arqs, deployable, P2))
    assert calls == [(P2, {'FPGA': 2}), (P2, {'FPGA': 0})]
    # given back: unbound in p1 again, no handle held, p2 under its limit
    assert _arq_rows(db, arqs) == [(states.ARQ_UNBOUND, P1, None)] * 2
    assert quota_usage.usage(ctx, P2) == {'FPGA': 2}
    with db.connect() as conn:
        assert not conn.execute(sa.select(sa.func.count()).select_from(
            models.AttachHandle).where(models.AttachHandle.in_use)).scalar()
