"""Queries on /v1 accelerators: views, specs and attachment records."""

import json

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import orm

from cyborg import exception
from cyborg import states
from cyborg.db import arqs as arq_db
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import services as service_queries
from cyborg.db import session
from cyborg.db.session import main

LOG = logging.getLogger(__name__)

AGENT_BINARY = service_queries.AGENT_BINARY
INSTANCE = 'instance'
HOST = 'host'
ATTACHING = 'attaching'
ATTACHED = 'attached'
DETACHING = 'detaching'
SPEC_KEYS = ('remote', 'num', 'device_type', 'acc_capability')
# NOTE(accelerators): the hardware decides these of a discovered
# accelerator; an operator only describes its capabilities.
_HARDWARE_KEYS = ('remote', 'num', 'device_type')


def default_spec():
    """The spec of a new operator's accelerator: one remote unit."""
    return {'remote': 1, 'num': 1, 'device_type': None,
            'acc_capability': {}}


def _stored(acc):
    return json.loads(acc.acc_specs) if acc and acc.acc_specs else {}


def _hardware_spec(dep):
    """What the hardware says of a discovered deployable."""
    attrs = {attr.key: attr.value for attr in dep.attributes}
    traits = sorted(value for key, value in attrs.items()
                    if key.startswith('trait'))
    capability = {'num': dep.num_accelerators,
                  'resource_class': attrs.get('rc'), 'traits': traits,
                  'services': json.loads(dep.device.services or '[]')}
    return {'remote': 0, 'num': dep.num_accelerators,
            'device_type': dep.device.type, 'acc_capability': capability}


def _attachment(acc, arqs):
    if acc is None or acc.attach_type is None:
        return []
    entry = {'type': acc.attach_type, 'state': acc.attach_state,
             'via': 'v1'}
    if acc.attach_type == INSTANCE:
        mine = [arq for arq in arqs if arq.uuid == acc.arq_uuid]
        entry.update(instance_uuid=acc.attached_to, arq_uuid=acc.arq_uuid,
                     project_id=mine[0].project_id if mine else
                     acc.project_id)
    else:
        entry['host'] = acc.attached_to
    return [entry]


def _nova_bindings(arqs, acc):
    mine = acc.arq_uuid if acc is not None else None
    return [{'type': INSTANCE, 'state': arq.state, 'via': 'nova',
             'instance_uuid': arq.instance_uuid, 'arq_uuid': arq.uuid,
             'project_id': arq.project_id}
            for arq in arqs if arq.uuid != mine]


def _view(acc, dep=None, arqs=()):
    if dep is not None:
        spec = _hardware_spec(dep)
        spec['acc_capability'].update(
            _stored(acc).get('acc_capability') or {})
        base = {'uuid': dep.uuid, 'name': dep.name,
                'host': dep.device.hostname, 'deployable_uuid': dep.uuid,
                'device_uuid': dep.device.uuid,
                'created_at': dep.created_at,
                'updated_at': max(filter(None, (
                    dep.updated_at, acc.updated_at if acc else None)),
                    default=None)}
    else:
        spec = dict(default_spec(), **_stored(acc))
        base = {'uuid': acc.uuid, 'name': acc.name, 'host': None,
                'deployable_uuid': None, 'device_uuid': None,
                'created_at': acc.created_at, 'updated_at': acc.updated_at}
    base.update(acc_specs=spec, revision=acc.revision if acc else 1,
                attachments=_attachment(acc, arqs) + _nova_bindings(arqs, acc))
    for key in ('created_at', 'updated_at'):
        base[key] = base[key].isoformat() if base[key] else None
    return base


def _deployables(stmt, load=orm.selectinload):
    return stmt.options(orm.joinedload(models.Deployable.device),
                        load(models.Deployable.attributes),
                        load(models.Deployable.accelerator))


def _held_arqs(session, deployable_ids=None):
    """Held ARQs by deployable id: of these deployables, or of all."""
    found = {}
    if deployable_ids is not None and not deployable_ids:
        return found
    held = models.AcceleratorRequest.state.in_(states.ARQ_HOLDS_DEVICE)
    where = (models.AcceleratorRequest.deployable_id.is_not(None)
             if deployable_ids is None else
             models.AcceleratorRequest.deployable_id.in_(deployable_ids))
    rows = session.scalars(sa.select(models.AcceleratorRequest).where(
        where, held)).all()
    for row in rows:
        found.setdefault(row.deployable_id, []).append(row)
    return found


@main.reader
def list_all(context):
    """Every accelerator: discovered deployables, then operators' records;
    five SELECTs whatever their number."""
    session = context.session
    # NOTE(accelerators): subqueryload reads each relationship of the whole
    # list in one SELECT; selectinload would send one per 500 deployables.
    deps = session.scalars(_deployables(
        sa.select(models.Deployable).order_by(models.Deployable.id),
        orm.subqueryload)).all()
    arqs = _held_arqs(session)
    views = [_view(dep.accelerator, dep, arqs.get(dep.id, ()))
             for dep in deps]
    others = session.scalars(
        sa.select(models.Accelerator)
        .where(models.Accelerator.deployable_id.is_(None))
        .order_by(models.Accelerator.id)).all()
    return views + [_view(acc) for acc in others]


def _find(session, uuid, lock=False):
    """``(accelerator row or None, deployable or None)`` of a uuid."""
    stmt = sa.select(models.Accelerator).where(
        models.Accelerator.uuid == uuid)
    if lock:
        stmt = stmt.with_for_update()
    acc = session.scalars(stmt).first()
    if acc is not None and acc.deployable_id is None:
        return acc, None
    dep = session.scalars(_deployables(sa.select(models.Deployable).where(
        models.Deployable.uuid == uuid))).first()
    if dep is None:
        raise exception.AcceleratorNotFound(uuid=uuid)
    return acc, dep


@main.reader
def get(context, uuid):
    acc, dep = _find(context.session, uuid)
    arqs = _held_arqs(context.session, [dep.id]).get(dep.id, ()) \
        if dep is not None else ()
    return _view(acc, dep, arqs)


@session.retry_on_conflict
@main.writer
def create(context, name, uuid=None, project_id=None):
    """An operator's record of an accelerator no agent sees.

    :raises DuplicateAccelerator: the name or uuid is taken (by another
        record or by a discovered deployable).
    """
    session = context.session
    uuid = uuid or uuidutils.generate_uuid()
    for field, value, column in (
            ('name', name, models.Deployable.name),
            ('uuid', uuid, models.Deployable.uuid)):
        if session.scalar(sa.select(models.Deployable.id)
                          .where(column == value)) is not None:
            raise exception.DuplicateAccelerator(field=field, value=value)
    acc = models.Accelerator(uuid=uuid, name=name, project_id=project_id,
                             acc_specs=json.dumps(default_spec()),
                             revision=1)
    try:
        with session.begin_nested():
            session.add(acc)
    except db_exc.DBDuplicateEntry as exc:
        field = 'uuid' if 'uuid' in ' '.join(exc.columns or ()) else 'name'
        raise exception.DuplicateAccelerator(
            field=field, value=uuid if field == 'uuid' else name) from exc
    LOG.info('Accelerator %s (%s) created', name, uuid)
    return _view(acc)


def _row_of(session, acc, dep):
    """The accelerator row of a deployable, created on first use."""
    if acc is not None:
        return acc
    acc = models.Accelerator(uuid=dep.uuid, deployable_id=dep.id, revision=1)
    try:
        with session.begin_nested():
            session.add(acc)
    except db_exc.DBDuplicateEntry:
        acc = session.scalars(sa.select(models.Accelerator).where(
            models.Accelerator.deployable_id == dep.id)).one()
    return acc


def _merged_spec(acc, dep, uuid, key, value):
    if key is None:
        wanted = dict(value)
    else:
        wanted = {key: value}
    if dep is None:
        return {**default_spec(), **_stored(acc), **wanted}
    hardware = _hardware_spec(dep)
    for name in _HARDWARE_KEYS:
        if name in wanted and wanted[name] != hardware[name]:
            raise exception.AcceleratorSpecManaged(key=name, uuid=uuid)
    return {'acc_capability': wanted.get(
        'acc_capability', _stored(acc).get('acc_capability') or {})}


@session.retry_on_conflict
@main.writer
def update_spec(context, uuid, key, value, revision=None):
    """Set the whole spec (``key`` None) or one key of it.

    :param revision: the revision the caller read (its If-Match); None
        takes the current one.
    :raises AcceleratorNotFound, AcceleratorSpecManaged,
        AcceleratorChanged: nothing is written.
    """
    session = context.session
    acc, dep = _find(session, uuid, lock=True)
    acc = _row_of(session, acc, dep) if dep is not None else acc
    if revision is not None and revision != acc.revision:
        raise exception.AcceleratorChanged(uuid=uuid, revision=acc.revision)
    spec = _merged_spec(acc, dep, uuid, key, value)
    # NOTE(accelerators): the revision in the WHERE makes the write lose
    # against any other that got in first, even where the database does
    # not lock the row (SQLite).
    count = session.execute(
        sa.update(models.Accelerator)
        .where(models.Accelerator.id == acc.id,
               models.Accelerator.revision == acc.revision)
        .values(acc_specs=json.dumps(spec), revision=acc.revision + 1,
                updated_at=clock.utc_now())
        .execution_options(synchronize_session=False)).rowcount
    if not count:
        raise exception.AcceleratorChanged(uuid=uuid, revision='newer')
    session.expire(acc)
    arqs = _held_arqs(session, [dep.id]).get(dep.id, ()) \
        if dep is not None else ()
    return _view(acc, dep, arqs)


def _check_host(session, host):
    if session.scalar(sa.select(models.Service.id).where(
            models.Service.host == host,
            models.Service.binary == AGENT_BINARY)) is None:
        raise exception.AgentNotFound(host=host)


def _job(acc, dep, kind, target):
    job = {'uuid': acc.uuid, 'kind': kind, 'target': target,
           'arq_uuid': acc.arq_uuid, 'deployable': None}
    if dep is not None:
        cpid = dep.device.controlpath_ids[0]
        job['deployable'] = {
            'uuid': dep.uuid, 'name': dep.name, 'host': dep.device.hostname,
            'driver_name': dep.driver_name or dep.device.driver_name,
            'cpid': [cpid.cpid_type, cpid.cpid_info]}
    return job


def may_name(context, project_id):
    """Whether an error may name an instance of ``project_id`` to the
    caller: an administrator's, or one of the caller's own project."""
    return bool(context.is_admin or (
        project_id is not None and project_id == context.project_id))


@main.reader
def instance_projects(context, instance_uuids):
    """The project of each of these instances that ARQs record; None for
    one whose ARQs disagree."""
    if not instance_uuids:
        return {}
    rows = context.session.execute(
        sa.select(models.AcceleratorRequest.instance_uuid,
                  models.AcceleratorRequest.project_id).where(
            models.AcceleratorRequest.instance_uuid.in_(
                sorted(set(instance_uuids))))).all()
    found = {}
    for instance, project in rows:
        found.setdefault(instance, set()).add(project)
    return {instance: projects.pop() if len(projects) == 1 else None
            for instance, projects in found.items()}


def _attached(context, uuid, instance, project_id):
    """The conflict of an accelerator attached to an instance; another
    project's instance is not named."""
    if may_name(context, project_id):
        return exception.AcceleratorAttached(uuid=uuid,
                                             target='instance %s' % instance)
    return exception.AcceleratorAttachedElsewhere(uuid=uuid)


def _check_attachable(context, dep, uuid, kind, target, arqs):
    device = dep.device
    if kind == HOST and target != device.hostname:
        raise exception.Invalid(
            reason='accelerator %s is on host %s; it can only be attached '
                   'to that host' % (uuid, device.hostname))
    usable = (states.DEVICE_TAKES_BINDS if kind == INSTANCE else
              states.DEVICE_ATTACHES_TO_HOST)
    if device.status not in usable:
        raise exception.DeviceStateConflict(
            uuid=device.uuid, status=device.status,
            expected=' or '.join(usable), action='attach an accelerator of')
    if arqs:
        # NOTE(accelerators): the caller's own instance, when one of them
        # is, says the most without telling of another project's.
        arq = next((arq for arq in arqs
                    if may_name(context, arq.project_id)), arqs[0])
        raise _attached(context, uuid, arq.instance_uuid, arq.project_id)


def _attach_project(session, acc):
    """The project of a /v1 attach to an instance: its ARQ's, as the
    accelerator's view shows it."""
    project = None
    if acc.arq_uuid is not None:
        project = session.scalar(
            sa.select(models.AcceleratorRequest.project_id).where(
                models.AcceleratorRequest.uuid == acc.arq_uuid))
    return project if project is not None else acc.project_id


@session.retry_on_conflict
@main.writer
def start_attach(context, uuid, kind, target, project_id=None):
    """Claim an accelerator for an attach: it becomes 'attaching'.

    For an instance, its ARQ is created too.

    :returns: the job the conductor carries out (see ``_job``).
    :raises AcceleratorNotFound, AgentNotFound, Invalid,
        DeviceStateConflict, AcceleratorAttached, AcceleratorBusy.
    """
    session = context.session
    acc, dep = _find(session, uuid, lock=True)
    if kind == HOST:
        _check_host(session, target)
    if dep is not None:
        arqs = _held_arqs(session, [dep.id]).get(dep.id, [])
        arqs = [arq for arq in arqs
                if acc is None or arq.uuid != acc.arq_uuid]
        _check_attachable(context, dep, uuid, kind, target, arqs)
        acc = _row_of(session, acc, dep)
    if acc.attach_type is not None:
        if acc.attach_state != ATTACHED:
            raise exception.AcceleratorBusy(uuid=uuid,
                                            action=acc.attach_state)
        if acc.attach_type == INSTANCE:
            raise _attached(context, uuid, acc.attached_to,
                            _attach_project(session, acc))
        raise exception.AcceleratorAttached(
            uuid=uuid, target='%s %s' % (acc.attach_type, acc.attached_to))
    values = {'attach_type': kind, 'attach_state': ATTACHING,
              'attached_to': target, 'updated_at': clock.utc_now(),
              'arq_uuid': None}
    if kind == INSTANCE:
        values['arq_uuid'] = arq_db.create_for_attach(context, project_id)
    count = session.execute(
        sa.update(models.Accelerator)
        .where(models.Accelerator.id == acc.id,
               models.Accelerator.attach_type.is_(None))
        .values(**values).execution_options(synchronize_session=False)
    ).rowcount
    if not count:
        raise exception.AcceleratorBusy(uuid=uuid, action=ATTACHING)
    session.expire(acc)
    return _job(acc, dep, kind, target)


@session.retry_on_conflict
@main.writer
def set_attach_state(context, uuid, expected, state):
    """Compare-and-swap the attach state; returns whether it swapped."""
    return bool(context.session.execute(
        sa.update(models.Accelerator)
        .where(models.Accelerator.uuid == uuid,
               models.Accelerator.attach_state == expected)
        .values(attach_state=state, updated_at=clock.utc_now())).rowcount)


@session.retry_on_conflict
@main.writer
def clear_attachment(context, uuid):
    """Forget an attachment; returns the handles its ARQ's agent must
    release (the ARQ is deleted)."""
    session = context.session
    acc = session.scalars(sa.select(models.Accelerator).where(
        models.Accelerator.uuid == uuid).with_for_update()).one()
    released = []
    if acc.arq_uuid is not None:
        found = session.scalars(sa.select(models.AcceleratorRequest).where(
            models.AcceleratorRequest.uuid == acc.arq_uuid)).first()
        if found is not None:
            _, released = arq_db.delete(context, uuids=[acc.arq_uuid])
    acc.attach_type = acc.attach_state = acc.attached_to = None
    acc.arq_uuid = None
    acc.updated_at = clock.now(session)
    return released


@session.retry_on_conflict
@main.writer
def start_detach(context, uuid):
    """An attached accelerator becomes 'detaching'.

    :returns: the job (see ``_job``); its ``kind`` is None when nothing
        is attached through /v1, with ``instances`` that Nova bound:
        ``(instance uuid, project id)`` pairs.
    :raises AcceleratorNotFound, AcceleratorBusy.
    """
    session = context.session
    acc, dep = _find(session, uuid, lock=True)
    kind = acc.attach_type if acc is not None else None
    if kind is None:
        job = _job(acc or models.Accelerator(uuid=uuid), dep, None, None)
        arqs = _held_arqs(session, [dep.id]).get(dep.id, []) \
            if dep is not None else []
        job['instances'] = sorted(
            {(arq.instance_uuid, arq.project_id) for arq in arqs},
            key=lambda pair: (pair[0] or '', pair[1] or ''))
        return job
    if acc.attach_state != ATTACHED or not set_attach_state(
            context, uuid, ATTACHED, DETACHING):
        raise exception.AcceleratorBusy(uuid=uuid, action=acc.attach_state)
    return _job(acc, dep, kind, acc.attached_to)


@session.retry_on_conflict
@main.writer
def recover(context, older_than):
    """Settle attaches and detaches a stopped conductor left half done:
    a detach is taken back (still attached), an attach is forgotten."""
    cutoff = clock.utc_ago(older_than)
    session = context.session
    stale = session.scalars(sa.select(models.Accelerator).where(
        models.Accelerator.attach_state.in_((ATTACHING, DETACHING)),
        models.Accelerator.updated_at < cutoff)).all()
    for acc in stale:
        if acc.attach_state == DETACHING:
            acc.attach_state = ATTACHED
        else:
            LOG.warning('Attach of accelerator %s was interrupted; it is '
                        'detached', acc.uuid)
            clear_attachment(context, acc.uuid)
    return len(stale)
