"""Queries on accelerator requests (ARQs): create, bind, unbind, delete."""

import json
import uuid as uuid_lib

from oslo_db.sqlalchemy import utils as db_utils
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg import deadline
from cyborg import exception
from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import ownership
from cyborg.db import quota_usage
from cyborg.db import scrubs
from cyborg.db import session
from cyborg.db.session import main

LOG = logging.getLogger(__name__)

#: What ``finish_bind`` answers a conductor whose bind another conductor
#: took over (and may have finished): it must leave the handle alone.
LOST = 'lost'


def _query():
    """ARQs with their profile's name and their handle, in one SELECT:
    the one builder of every read of ARQs."""
    # NOTE(arqs): outer joins: the ARQ of a /v1 attach has no profile, and
    # one an inner join left out would be missing from lists and from the
    # notifications of a delete.
    return (sa.select(models.AcceleratorRequest,
                      models.DeviceProfile.name,
                      models.AttachHandle)
            .outerjoin(models.DeviceProfile, models.DeviceProfile.id ==
                       models.AcceleratorRequest.device_profile_id)
            .outerjoin(models.AttachHandle, models.AttachHandle.id ==
                       models.AcceleratorRequest.attach_handle_id))


def _select():
    """``_query`` in the ARQs' order of creation."""
    return _query().order_by(models.AcceleratorRequest.id)


def _values(row, profile_name, handle):
    """An ARQ row as a dict: its columns, ``device_profile_name`` and
    ``handle`` (None, or its ``type``, ``uuid`` and ``info`` JSON text)."""
    values = {name: getattr(row, name) for name in (
        'id', 'uuid', 'state', 'device_profile_group_id', 'hostname',
        'device_rp_uuid', 'instance_uuid', 'project_id', 'created_at',
        'updated_at')}
    values['device_profile_name'] = profile_name
    values['handle'] = None if handle is None else {
        'type': handle.attach_type, 'uuid': handle.uuid,
        'info': handle.attach_info}
    return values


def _all_values(results):
    return [_values(row, name, handle) for row, name, handle in results]


def _scoped(stmt, project_id):
    if project_id is not None:
        stmt = stmt.where(models.AcceleratorRequest.project_id == project_id)
    return stmt


def units(group):
    """How many ARQs a profile group makes: the sum of its amounts."""
    return sum(quota_usage.group_demand(group).values())


@session.retry_on_conflict
@main.writer
def create_for_attach(context, project_id):
    """The ARQ of a /v1 attach to an instance: no profile, one unit."""
    row = models.AcceleratorRequest(
        uuid=uuidutils.generate_uuid(), state=states.ARQ_INITIAL,
        device_profile_id=None, device_profile_group_id=0,
        project_id=project_id)
    context.session.add(row)
    context.session.flush()
    return row.uuid


def _profile(session, profile_name):
    profile = session.scalars(sa.select(models.DeviceProfile).where(
        models.DeviceProfile.name == profile_name)).first()
    if profile is None:
        raise exception.DeviceProfileNotFound(uuid=profile_name)
    return profile, json.loads(profile.profile_json).get('groups', [])


def _keyed(key, count):
    """The uuids of the ARQs of the create ``key`` names: the same for
    every run of it; random ones without a key."""
    if key is None:
        return [uuidutils.generate_uuid() for _ in range(count)]
    return [str(uuid_lib.uuid5(uuid_lib.UUID(key), str(index)))
            for index in range(count)]


@main.reader
def made_by(context, profile_name, project_id, key):
    """The dicts of the ARQs an earlier run of the create ``key`` made, or
    [] when it made none."""
    profile, groups = _profile(context.session, profile_name)
    uuids = _keyed(key, sum(units(group) for group in groups))
    return _all_values(context.session.execute(_scoped(_select().where(
        models.AcceleratorRequest.uuid.in_(uuids)), project_id)).all())


@session.retry_on_conflict
@main.writer
def create(context, profile_name, project_id, key=None):
    """One ARQ per unit of each group of the named profile, all or none;
    returns their dicts (see ``_values``).

    :param key: a uuid the ARQs' uuids derive from (``made_by``); a run
        that races an earlier one with the same key raises
        DBDuplicateEntry.
    :raises DeviceProfileNotFound: no profile has that name.
    :raises DeadlineExceeded: the caller stopped waiting; nothing is
        written.
    """
    session = context.session
    profile, groups = _profile(session, profile_name)
    slots = [index for index, group in enumerate(groups)
             for _ in range(units(group))]
    rows = [models.AcceleratorRequest(
        uuid=uuid, state=states.ARQ_INITIAL,
        device_profile_id=profile.id, device_profile_group_id=index,
        project_id=project_id)
        for uuid, index in zip(_keyed(key, len(slots)), slots, strict=True)]
    session.add_all(rows)
    session.flush()
    # NOTE(deadline): the last thing before the commit, inside the
    # transaction: a caller that has given up (the API answered 503) by
    # now gets nothing written. What passes between here and the commit
    # is undone by binding.create, or at last removed as an orphan.
    deadline.check(context, 'Creating %d accelerator requests' % len(rows))
    return [_values(row, profile.name, None) for row in rows]


@main.reader
def get(context, uuid, project_id=None):
    """One ARQ; another project's is reported missing, not forbidden."""
    found = context.session.execute(_scoped(_select().where(
        models.AcceleratorRequest.uuid == uuid), project_id)).first()
    if found is None:
        raise exception.ARQNotFound(uuid=uuid)
    return _values(*found)


@main.reader
def list_arqs(context, project_id=None, instance_uuid=None, limit=None,
              marker=None, sort_key='id', sort_dir='asc', resolved=False):
    """ARQs, of one project unless ``project_id`` is None (admins).

    :param marker: uuid of the last ARQ of the previous page.
    :param resolved: only those whose binding is settled (ARQ_RESOLVED).
    :raises InvalidParameterValue: no ARQ (visible here) has that uuid.
    """
    model = models.AcceleratorRequest
    query = _scoped(_query(), project_id)
    if instance_uuid is not None:
        query = query.where(model.instance_uuid == instance_uuid)
    if resolved:
        query = query.where(model.state.in_(sorted(states.ARQ_RESOLVED)))
    marker_row = None
    if marker is not None:
        marker_row = context.session.scalars(_scoped(
            sa.select(model).where(model.uuid == marker), project_id)).first()
        if marker_row is None:
            raise exception.InvalidParameterValue(
                err='Marker %s was not found.' % marker)
    sort_keys = [sort_key] if sort_key == 'id' else [sort_key, 'id']
    query = db_utils.paginate_query(query, model, limit, sort_keys,
                                    marker=marker_row, sort_dir=sort_dir)
    return _all_values(context.session.execute(query).all())


@main.reader
def unresolved(context, instance_uuid, project_id=None):
    """Uuids of an instance's ARQs whose binding is not settled yet."""
    return context.session.scalars(_scoped(
        sa.select(models.AcceleratorRequest.uuid)
        .where(models.AcceleratorRequest.instance_uuid == instance_uuid,
               models.AcceleratorRequest.state.not_in(
                   sorted(states.ARQ_RESOLVED)))
        .order_by(models.AcceleratorRequest.id), project_id)).all()


def _lock(session, uuids, project_id):
    rows = session.scalars(_scoped(
        sa.select(models.AcceleratorRequest)
        .where(models.AcceleratorRequest.uuid.in_(list(uuids)))
        .order_by(models.AcceleratorRequest.id)
        .with_for_update(), project_id)).all()
    found = {row.uuid: row for row in rows}
    missing = sorted(set(uuids) - set(found))
    if missing:
        raise exception.ARQNotFound(uuid=', '.join(missing))
    return found


def _check_transition(row, target):
    if row.state not in states.ARQ_TRANSITIONS[target]:
        raise exception.ARQBadState(uuid=row.uuid, state=row.state,
                                    target=target)
    if row.state == states.ARQ_UNBOUND and row.attach_handle_id is not None:
        # NOTE(arqs): its handle is still being released on the host.
        raise exception.ARQBadState(uuid=row.uuid,
                                    state='Unbound (releasing its handle)',
                                    target=target)


def _same_binding(row, binding):
    """Whether ``row`` is BindStarted or Bound with just this binding."""
    return (row.state in states.ARQ_HOLDS_DEVICE and
            row.instance_uuid == binding['instance_uuid'] and
            row.hostname == binding['hostname'] and
            row.device_rp_uuid == binding['device_rp_uuid'])


def _take_handle(session, deployable_id):
    """Mark one free handle of a deployable in use; None when none is free.

    The UPDATE only succeeds on a handle still free, so two concurrent
    binds can never share one, whatever the database's locking.
    """
    candidates = session.scalars(
        sa.select(models.AttachHandle.id)
        .where(models.AttachHandle.deployable_id == deployable_id,
               models.AttachHandle.in_use.is_(False))
        .order_by(models.AttachHandle.id)).all()
    for handle_id in candidates:
        taken = session.execute(
            sa.update(models.AttachHandle)
            .where(models.AttachHandle.id == handle_id,
                   models.AttachHandle.in_use.is_(False))
            .values(in_use=True)).rowcount
        if taken:
            return handle_id
    return None


def _release(session, row, released=None, keep=False):
    """Free the ARQ's handle; note in ``released`` what the agent must
    undo on the host (a prepared handle of a bind that got that far, or
    of an unbind whose release is still pending).

    :param keep: leave a handle to undo on the host taken by the ARQ
        until ``finish_unbind``, so that no bind gets it meanwhile.
    :returns: whether the handle was kept.
    """
    if row.attach_handle_id is None:
        return False
    handle = session.get(models.AttachHandle, row.attach_handle_id)
    prepared = []
    if released is not None and row.state in states.ARQ_MAY_BE_PREPARED:
        prepared = ownership.prepared(handle.deployable, handle, row.uuid)
        released.extend(prepared)
    if keep and prepared:
        return True
    session.execute(sa.update(models.AttachHandle)
                    .where(models.AttachHandle.id == row.attach_handle_id)
                    .values(in_use=False))
    return False


@session.retry_on_conflict
@main.writer
def start_bind(context, bindings, project_id=None, owner=None):
    """Check every binding, then move each ARQ to BindStarted with a handle.

    :param bindings: ARQ uuid -> ``{'hostname', 'device_rp_uuid',
        'instance_uuid'}`` (and optionally ``project_id``).
    :param owner: the conductor that will do the host-side work.
    :returns: uuids now BindStarted, and uuids already BindFailed because
        their provider had no free attach handle.
    :raises ARQNotFound, ARQBadState, Invalid: nothing is changed.
    """
    session = context.session
    rows = _lock(session, bindings, project_id)
    instances = {binding['instance_uuid'] for binding in bindings.values()}
    # NOTE(arqs): as upstream, no hot-add: an instance's ARQs are all
    # bound in one request.
    taken = session.scalars(
        sa.select(models.AcceleratorRequest.instance_uuid)
        .where(models.AcceleratorRequest.instance_uuid.in_(sorted(instances)),
               models.AcceleratorRequest.uuid.not_in(list(bindings)))
    ).first()
    if taken is not None:
        raise exception.Invalid(
            reason='instance %s already has accelerator requests; bind all '
                   'of an instance\'s in one request' % taken)
    by_rp = {}
    # NOTE(arqs): a retried PATCH (the API gave up waiting, 503, but a
    # conductor took the first message later) finds its own binding under
    # way or done: nothing to do for it, and no conflict.
    repeated = {uuid for uuid, row in rows.items()
                if _same_binding(row, bindings[uuid])}
    for uuid, row in rows.items():
        if uuid in repeated:
            continue
        _check_transition(row, states.ARQ_BIND_STARTED)
        rp_uuid = bindings[uuid]['device_rp_uuid']
        if rp_uuid not in by_rp:
            by_rp[rp_uuid] = session.scalars(sa.select(models.Deployable)
                                             .where(models.Deployable.rp_uuid
                                                    == rp_uuid)).first()
        if by_rp[rp_uuid] is None:
            raise exception.Invalid(
                reason='no deployable has resource provider %s' % rp_uuid)
    started, failed = [], []
    for uuid, row in rows.items():
        if uuid in repeated:
            continue
        binding = bindings[uuid]
        deployable = by_rp[binding['device_rp_uuid']]
        if _bind_row(session, row, binding, deployable, owner):
            started.append(uuid)
        else:
            failed.append(uuid)
    return started, failed


def _bind_row(session, row, binding, deployable, owner=None):
    """Record the binding on the ARQ and take a handle; False (and
    BindFailed) when the deployable has none free or refuses binds
    (``states.refuses_binds``)."""
    row.hostname = binding['hostname']
    row.device_rp_uuid = binding['device_rp_uuid']
    row.instance_uuid = binding['instance_uuid']
    if binding.get('project_id'):
        row.project_id = binding['project_id']
    row.deployable_id = deployable.id
    row.updated_at = clock.now(session)
    refused = _refusal(deployable)
    if refused is not None:
        # NOTE(arqs): Placement reserves such a device, but an allocation
        # made before that may still come; the instance goes elsewhere.
        LOG.warning('Bind of ARQ %s failed on %s: %s takes no new bind: %s',
                    row.uuid, row.hostname, deployable.name, refused.reason)
        row.state = states.ARQ_BIND_FAILED
        row.owner, row.taken_at = owner, row.updated_at
        return False
    handle_id = _take_handle(session, deployable.id)
    if handle_id is None:
        LOG.warning('Bind of ARQ %s failed on %s: no free attach handle '
                    'on %s', row.uuid, row.hostname, deployable.name)
        row.state = states.ARQ_BIND_FAILED
        # NOTE(arqs): held until Nova is told of the failure.
        row.owner, row.taken_at = owner, row.updated_at
        return False
    row.attach_handle_id = handle_id
    row.state = states.ARQ_BIND_STARTED
    row.owner, row.taken_at = owner, row.updated_at
    return True


def _refusal(deployable):
    """Why ``deployable`` (a row, its device loaded) takes no new bind
    (a ``states.BindRefusal``), or None."""
    device = deployable.device
    return states.refuses_binds(device.status, device.health,
                                deployable.cleaning_since is not None)


@session.retry_on_conflict
@main.writer
def start_bind_on(context, uuid, instance_uuid, deployable_uuid, owner=None):
    """Bind one ARQ to a named deployable (a /v1 attach, which may add an
    accelerator to an instance that has others).

    :returns: whether it is BindStarted (else BindFailed: no free handle).
    """
    session = context.session
    row = _lock(session, [uuid], None)[uuid]
    _check_transition(row, states.ARQ_BIND_STARTED)
    deployable = session.scalars(sa.select(models.Deployable).where(
        models.Deployable.uuid == deployable_uuid)).one()
    return _bind_row(session, row, {
        'hostname': deployable.device.hostname,
        'device_rp_uuid': deployable.rp_uuid,
        'instance_uuid': instance_uuid}, deployable, owner)


@session.retry_on_conflict
@main.writer
def bind_without_handle(context, uuid, instance_uuid):
    """Initial -> Bound for the ARQ of an accelerator no agent manages
    (nothing to prepare on a host)."""
    row = _lock(context.session, [uuid], None)[uuid]
    _check_transition(row, states.ARQ_BIND_STARTED)
    row.instance_uuid = instance_uuid
    row.state = states.ARQ_BOUND
    row.updated_at = clock.now(context.session)


@session.retry_on_conflict
@main.writer
def finish_bind(context, uuid, ok, owner=None):
    """BindStarted -> Bound (or BindFailed, releasing the handle).

    :param owner: the conductor finishing it; with one given, only the
        ARQ's owner may.
    :returns: ``(instance_uuid, state)``; None when the ARQ moved on
        meanwhile (unbound or deleted); LOST when another conductor took
        the bind over (or finished it).
    """
    target = states.ARQ_BOUND if ok else states.ARQ_BIND_FAILED
    row = context.session.scalars(
        sa.select(models.AcceleratorRequest)
        .where(models.AcceleratorRequest.uuid == uuid)
        .with_for_update()).first()
    if row is None:
        return None
    if owner is not None and (
            row.state in states.ARQ_BIND_ENDED or
            row.state == states.ARQ_BIND_STARTED and row.owner != owner):
        return LOST
    if row.state != states.ARQ_BIND_STARTED:
        return None
    if not ok:
        _release(context.session, row)
        row.attach_handle_id = None
    row.state = target
    # NOTE(arqs): the owner keeps the ARQ until Nova has its event
    # (ownership.told); a successor that takes it over sends it.
    row.updated_at = row.taken_at = clock.now(context.session)
    return row.instance_uuid, target


@session.retry_on_conflict
@main.writer
def unbind(context, uuids, project_id=None, owner=None):
    """Release the handles and forget the bindings (-> Unbound).

    :param owner: the conductor that will have the agents release the
        prepared handles: each ARQ keeps such a handle, and that
        conductor holds the ARQ, until ``finish_unbind``.
    :returns: the prepared handles the agents must release.
    """
    rows = _lock(context.session, uuids, project_id)
    for row in rows.values():
        _check_transition(row, states.ARQ_UNBOUND)
    used = [row.deployable_id for row in rows.values()]
    released = []
    for row in rows.values():
        kept = _release(context.session, row, released,
                        keep=owner is not None)
        row.state = states.ARQ_UNBOUND
        row.attach_handle_id = row.attach_handle_id if kept else None
        row.owner, row.taken_at = ((owner, clock.now(context.session))
                                   if kept else (None, None))
        row.deployable_id = None
        row.hostname = row.device_rp_uuid = row.instance_uuid = None
        row.updated_at = clock.now(context.session)
    scrubs.mark(context.session, used)
    return released


@session.retry_on_conflict
@main.writer
def delete(context, uuids=None, instance_uuid=None, project_id=None,
           bound_ok=True):
    """Delete ARQs by uuid (all must exist) or every ARQ of an instance.

    :param bound_ok: False when the caller has no service token: then
        only ARQs without a binding (Initial, Unbound) may go.
    :returns: how many were deleted, and the prepared handles the agents
        must release.
    :raises BoundARQNeedsServiceToken: nothing is deleted.
    """
    session = context.session
    if uuids is not None:
        rows = list(_lock(session, uuids, project_id).values())
    else:
        rows = session.scalars(_scoped(
            sa.select(models.AcceleratorRequest)
            .where(models.AcceleratorRequest.instance_uuid == instance_uuid)
            .with_for_update(), project_id)).all()
    for row in rows:
        if not bound_ok and row.state not in states.ARQ_WITHOUT_BINDING:
            raise exception.BoundARQNeedsServiceToken(uuid=row.uuid,
                                                      state=row.state)
    released = []
    used = [row.deployable_id for row in rows]
    for row in rows:
        _release(session, row, released)
        session.delete(row)
    scrubs.mark(session, used)
    return len(rows), released

