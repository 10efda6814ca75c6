"""/v1 attach in the conductor: instance ownership, and 409 wording."""

import logging
import uuid

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import states
from cyborg.conductor import accelerators
from cyborg.conductor import quota
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import models
from cyborg.db import quota_usage
from cyborg.tests import deployments
from cyborg.tests import fake_services
from cyborg.tests import processes

OTHER_PROJECT = 'in use by another project'


def _caller(project, admin=False):
    return cyborg_context.RequestContext(
        user_id='u-%s' % project, project_id=project,
        roles=['admin', 'member'] if admin else ['member'], is_admin=admin)


P1 = _caller('p1')
P2 = _caller('p2')
ADMIN = _caller('p-admin', admin=True)


def _new():
    return str(uuid.uuid4())


@pytest.fixture
def agent(stack, override):
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack()
    agent.report()
    return agent


@pytest.fixture
def acc(agent, ctx):
    """The fake driver's accelerator (ready, nothing attached)."""
    (item,) = conductor_rpcapi.ConductorAPI().list_accelerators(ctx)
    return item['uuid']


@pytest.fixture
def nova(override):
    """A FakeNova, and [nova] pointing at it."""
    with deployments.FakeNova() as fake:
        fake_services.point('nova', fake.url, override)
        yield fake


def _attach(context, acc, instance):
    return conductor_rpcapi.ConductorAPI().attach_accelerator(
        context, acc, instance_uuid=instance, project_id=context.project_id)


def _detach(context, acc):
    conductor_rpcapi.ConductorAPI().detach_accelerator(context, acc)


def _rows(db):
    """How many /v1 accelerator rows, ARQs and used handles there are."""
    with db.connect() as conn:
        return tuple(conn.execute(sa.select(sa.func.count()).select_from(
            table).where(*where)).scalar() for table, where in (
                (models.Accelerator, ()),
                (models.AcceleratorRequest, ()),
                (models.AttachHandle, (models.AttachHandle.in_use,))))


def _nova_bound(db, acc, instance, project, deployable=True):
    """An ARQ Nova bound for ``instance`` (on the accelerator, or on no
    deployable)."""
    with db.begin() as conn:
        dep_id = conn.execute(sa.select(models.Deployable.id).where(
            models.Deployable.uuid == acc)).scalar() if deployable else None
        conn.execute(sa.insert(models.AcceleratorRequest).values(
            uuid=_new(), state=states.ARQ_BOUND, device_profile_group_id=0,
            instance_uuid=instance, project_id=project,
            deployable_id=dep_id))


# --- The ownership check ----------------------------------------------------


def test_own_instance_attaches(acc, nova, ctx):
    instance = _new()
    nova.own(instance, 'p1')
    attached = _attach(P1, acc, instance)
    (entry,) = attached['attachments']
    assert (entry['instance_uuid'], entry['project_id'], entry['state']) == (
        instance, 'p1', 'attached')
    assert [s['instance'] for s in nova.shown] == [instance]
    nova.wait_events(instance, 1)


@pytest.mark.parametrize('owner', ['p2', None])
def test_another_projects_or_unknown_instance_is_refused(acc, nova, db,
                                                         owner):
    instance = _new()
    if owner:
        nova.own(instance, owner)
    before = _rows(db)
    with pytest.raises(exception.InstanceNotInProject) as caught:
        _attach(P1, acc, instance)
    assert caught.value.message == (
        'Instance %s was not found in project p1; an accelerator can only '
        'be attached to an instance of the caller\'s project.' % instance)
    assert isinstance(caught.value, exception.Invalid)
    # NOTE(tests): refused before anything was written.
    assert _rows(db) == before == (0, 0, 0)
    assert accelerators.get(ADMIN, acc)['attachments'] == []
    assert nova.events_of(instance) == []


def test_admin_is_not_checked(acc, nova):
    instance = _new()
    attached = _attach(ADMIN, acc, instance)
    assert attached['attachments'][0]['instance_uuid'] == instance
    assert nova.shown == []


def test_unreachable_nova_is_503_and_nothing_changes(acc, override, db):
    fake_services.point('nova', 'http://127.0.0.1:%d/v2.1'
                        % processes.free_port(), override)
    with pytest.raises(exception.NovaUnavailable) as caught:
        _attach(P1, acc, _new())
    assert isinstance(caught.value, exception.ServiceUnavailable)
    assert caught.value.message.startswith(
        'Nova is unavailable, so the instance could not be checked')
    assert _rows(db) == (0, 0, 0)


def test_without_nova_the_attach_goes_ahead_and_is_logged(acc, caplog):
    caplog.set_level(logging.INFO, logger='cyborg.conductor.attachments')
    instance = _new()
    attached = _attach(P1, acc, instance)
    assert attached['attachments'][0]['instance_uuid'] == instance
    skipped = [r.getMessage() for r in caplog.records
               if 'Nova is not configured' in r.getMessage()]
    assert skipped == [
        'Not checking that instance %s belongs to project p1: Nova is not '
        'configured ([nova] auth_type is not set)' % instance]


# --- Conflicts name only the caller's project's instances -------------------


def test_v1_attachment_is_named_to_its_project_only(acc, nova):
    instance = _new()
    nova.own(instance, 'p1')
    _attach(P1, acc, instance)
    again = _new()
    nova.own(again, 'p1')
    with pytest.raises(exception.AcceleratorAttached) as caught:
        _attach(P1, acc, again)
    assert caught.value.message == (
        'Accelerator %s is already attached to instance %s.'
        % (acc, instance))
    theirs = _new()
    nova.own(theirs, 'p2')
    with pytest.raises(exception.AcceleratorAttachedElsewhere) as caught:
        _attach(P2, acc, theirs)
    assert caught.value.message == (
        'Accelerator %s is already attached: it is in use by another '
        'project.' % acc)
    with pytest.raises(exception.AcceleratorAttached) as caught:
        _attach(ADMIN, acc, _new())
    assert instance in caught.value.message


def test_nova_binding_is_named_to_its_project_only(acc, nova, db):
    instance = _new()
    _nova_bound(db, acc, instance, 'p1')
    for caller in (P1, P2):
        mine = _new()
        nova.own(mine, caller.project_id)
        with pytest.raises(exception.AcceleratorAttached) as caught:
            _attach(caller, acc, mine)
        if caller is P1:
            assert 'attached to instance %s' % instance in \
                caught.value.message
        else:
            assert isinstance(caught.value,
                              exception.AcceleratorAttachedElsewhere)
            assert instance not in caught.value.message
            assert OTHER_PROJECT in caught.value.message
    # Detach: Nova bound it, nothing was attached through /v1.
    with pytest.raises(exception.AcceleratorAttached) as caught:
        _detach(P1, acc)
    assert caught.value.message == (
        'Accelerator %s is already attached to instance %s by Nova; detach '
        'it through Nova.' % (acc, instance))
    for caller in (P2, _caller(None)):
        with pytest.raises(exception.AcceleratorAttachedElsewhere) as caught:
            _detach(caller, acc)
        assert instance not in caught.value.message
    with pytest.raises(exception.AcceleratorAttached) as caught:
        _detach(ADMIN, acc)
    assert instance in caught.value.message


def test_nova_bindings_of_two_projects_name_neither(acc, db):
    _nova_bound(db, acc, _new(), 'p1')
    _nova_bound(db, acc, _new(), 'p2')
    with pytest.raises(exception.AcceleratorAttachedElsewhere):
        _detach(P1, acc)


@pytest.fixture
def allocated(agent, acc, db, monkeypatch):
    """Placement allocations of ``mine`` (an instance of p1, as its ARQ
    says) and of ``unknown`` (no ARQ) on the accelerator, as the agent
    reports them at attach and at detach; set ``consumers`` to choose."""
    mine, unknown = _new(), _new()
    _nova_bound(db, acc, mine, 'p1', deployable=False)
    found = {'mine': mine, 'unknown': unknown, 'consumers': []}

    @messaging.expected_exceptions(exception.CyborgException)
    def attach(context, uuid, **_kwargs):
        raise exception.AcceleratorAllocated(
            uuid=uuid, consumers=', '.join(found['consumers']))

    monkeypatch.setattr(agent, 'attach', attach)
    monkeypatch.setattr(agent, 'consumers',
                        lambda context, **_kwargs: found['consumers'])
    return found


@pytest.mark.parametrize('action', ['attach', 'detach'])
def test_allocations_name_only_the_callers_instances(allocated, acc, db,
                                                     action):
    def refused(caller, *consumers):
        allocated['consumers'] = list(consumers)
        with pytest.raises(exception.AcceleratorAllocated) as caught:
            if action == 'attach':
                _attach(caller, acc, _new())
            else:
                _detach(caller, acc)
        return caught.value

    mine, unknown = allocated['mine'], allocated['unknown']
    named = refused(P1, mine)
    assert named.message == (
        'Placement holds allocations on accelerator %s (consumers %s); '
        'release them through Nova first.' % (acc, mine))
    for caller, consumers in ((P1, (mine, unknown)), (P2, (mine,)),
                              (P2, (unknown,))):
        hidden = refused(caller, *consumers)
        assert isinstance(hidden, exception.AcceleratorAllocatedElsewhere)
        assert hidden.message == (
            'Placement holds allocations on accelerator %s: it is in use '
            'by another project.' % acc)
    assert '%s, %s' % (mine, unknown) in refused(ADMIN, mine,
                                                 unknown).message
    # NOTE(tests): a refused attach is undone; only the ARQ made above is
    # left.
    assert _rows(db)[1:] == (1, 0)


def test_an_instance_whose_arqs_disagree_has_no_project(db, ctx):
    agreed, torn = _new(), _new()
    _nova_bound(db, None, agreed, 'p1', deployable=False)
    _nova_bound(db, None, agreed, 'p1', deployable=False)
    _nova_bound(db, None, torn, 'p1', deployable=False)
    _nova_bound(db, None, torn, 'p2', deployable=False)
    assert accelerators.instance_projects(ctx, [agreed, torn, _new()]) == {
        agreed: 'p1', torn: None}


# --- Quota: an attach takes its whole deployable ---------------------------


def _units(db, acc):
    with db.connect() as conn:
        return conn.execute(sa.select(models.Deployable.num_accelerators)
                            .where(models.Deployable.uuid == acc)).scalar()


def test_an_attach_over_quota_is_refused_by_all_it_takes(acc, db, ctx,
                                                         override):
    units = _units(db, acc)
    assert units > 1
    override('limits', {'FPGA': str(units - 1)}, group='quota')
    before = _rows(db)
    with pytest.raises(exception.QuotaExceeded) as caught:
        _attach(P1, acc, _new())
    assert caught.value.kwargs['over'] == [
        {'resource': 'class:FPGA', 'limit': units - 1, 'usage': 0,
         'requested': units}]
    assert _rows(db) == before
    assert accelerators.get(ADMIN, acc)['attachments'] == []
    override('limits', {'FPGA': str(units)}, group='quota')
    _attach(P1, acc, _new())
    assert quota_usage.usage(ctx, 'p1') == {'FPGA': units}


def test_an_attach_a_concurrent_request_overtook_is_undone(
        acc, db, override, monkeypatch):
    units = _units(db, acc)
    override('limits', {'FPGA': str(units - 1)}, group='quota')
    real = quota.check
    calls = []

    def check(context, project_id, demand):
        # NOTE(tests): the first check passes, as it would have before a
        # concurrent request took the quota; the recheck is real.
        calls.append(dict(demand))
        if len(calls) > 1:
            real(context, project_id, demand)

    monkeypatch.setattr(quota, 'check', check)
    instance = _new()
    with pytest.raises(exception.QuotaExceeded):
        _attach(P1, acc, instance)
    assert calls == [{'FPGA': units}, {'FPGA': 0}]
    assert _rows(db) == (1, 0, 0)
    assert accelerators.get(ADMIN, acc)['attachments'] == []
