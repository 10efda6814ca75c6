"""Queries for the host-side work of binds: the job, who else holds the
deployable, and ARQs stuck in a transitional state."""

import json

import sqlalchemy as sa

from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import ownership
from cyborg.db.session import main


@main.reader
def bind_job(context, uuid):
    """What the host-side work of a bind needs, or None when the ARQ is
    not BindStarted any more.

    :returns: dict with ``group`` (the profile group), ``host`` (the
        agent's), ``driver_name``, ``cpid`` ([type, info]), ``deployable``
        (uuid, name, id, bitstream_id), ``handle`` (type, info, uuid),
        ``prepared`` (what to undo if the bind is dropped) and ``owner``
        (the conductor holding the bind).
    """
    session = context.session
    found = session.execute(
        sa.select(models.AcceleratorRequest, models.DeviceProfile,
                  models.Deployable, models.AttachHandle)
        .outerjoin(models.DeviceProfile, models.DeviceProfile.id ==
                   models.AcceleratorRequest.device_profile_id)
        .join(models.Deployable, models.Deployable.id ==
              models.AcceleratorRequest.deployable_id)
        .join(models.AttachHandle, models.AttachHandle.id ==
              models.AcceleratorRequest.attach_handle_id)
        .where(models.AcceleratorRequest.uuid == uuid,
               models.AcceleratorRequest.state == states.ARQ_BIND_STARTED)
    ).first()
    if found is None:
        return None
    row, profile, dep, handle = found
    groups = (json.loads(profile.profile_json).get('groups', [])
              if profile is not None else [])
    device = dep.device
    cpid = device.controlpath_ids[0]

    return {
        'uuid': row.uuid, 'owner': row.owner,
        'group': groups[row.device_profile_group_id]
        if row.device_profile_group_id < len(groups) else {},
        'host': device.hostname, 'driver_name': dep.driver_name or
        device.driver_name, 'cpid': [cpid.cpid_type, cpid.cpid_info],
        'deployable': {'uuid': dep.uuid, 'name': dep.name, 'id': dep.id,
                       'bitstream_id': dep.bitstream_id},
        'handle': {'type': handle.attach_type,
                   'info': json.loads(handle.attach_info),
                   'uuid': handle.uuid},
        'prepared': ownership.prepared(dep, handle, row.uuid),
    }


@main.reader
def others(context, uuid):
    """How many ARQs of other instances hold the deployable ARQ ``uuid``
    is binding to.

    ARQs of the same instance on that deployable want the same image;
    only other instances' bindings forbid loading a new one under them.
    """
    row = context.session.scalars(sa.select(models.AcceleratorRequest).where(
        models.AcceleratorRequest.uuid == uuid)).one()
    return context.session.scalar(
        sa.select(sa.func.count()).select_from(models.AcceleratorRequest)
        .where(models.AcceleratorRequest.deployable_id == row.deployable_id,
               models.AcceleratorRequest.state.in_(states.ARQ_HOLDS_DEVICE),
               models.AcceleratorRequest.instance_uuid != row.instance_uuid))


@main.reader
def stuck(context, older_than, limit):
    """ARQs in a transitional state not changed for ``older_than`` seconds.

    :returns: ``(how many, the uuids of the first ``limit`` of them,
        oldest first)``
    """
    changed = sa.func.coalesce(models.AcceleratorRequest.updated_at,
                               models.AcceleratorRequest.created_at)
    where = (models.AcceleratorRequest.state.in_(
                 sorted(states.ARQ_TRANSITIONAL)),
             changed < clock.utc_ago(older_than))
    count = context.session.scalar(
        sa.select(sa.func.count()).select_from(models.AcceleratorRequest)
        .where(*where))
    if not count:
        return 0, []
    uuids = context.session.scalars(
        sa.select(models.AcceleratorRequest.uuid).where(*where)
        .order_by(changed, models.AcceleratorRequest.id).limit(limit)).all()
    return count, uuids
