"""Queries on deployables beyond create/read/update/delete: programming."""

import sqlalchemy as sa

from cyborg import exception
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main


@main.reader
def program_target(context, deployable_uuid):
    """What programming a deployable needs to know, as a plain dict: its
    host, driver, control path, image and how many handles are in use.

    :raises DeployableNotFound: no such deployable.
    """
    dep = context.session.scalars(sa.select(models.Deployable).where(
        models.Deployable.uuid == deployable_uuid)).first()
    if dep is None:
        raise exception.DeployableNotFound(uuid=deployable_uuid)
    device = dep.device
    cpid = device.controlpath_ids[0]
    in_use = sum(1 for handle in dep.attach_handles if handle.in_use)
    return {'uuid': dep.uuid, 'name': dep.name, 'host': device.hostname,
            'device_uuid': device.uuid,
            'driver_name': dep.driver_name or device.driver_name,
            'cpid': [cpid.cpid_type, cpid.cpid_info], 'in_use': in_use,
            'bitstream_id': dep.bitstream_id}


@session.retry_on_conflict
@main.writer
def set_bitstream(context, deployable_uuid, image_id):
    """Record the image now loaded on a deployable."""
    context.session.execute(
        sa.update(models.Deployable)
        .where(models.Deployable.uuid == deployable_uuid)
        .values(bitstream_id=image_id))
