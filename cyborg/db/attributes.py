"""Queries on the attributes operators add to deployables."""

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main


@session.retry_on_conflict
@main.writer
def insert(context, deployable_id, key, value, to_object):
    """Add one attribute row; returns (``to_object(row)``, device uuid).

    :raises Invalid: no such deployable.
    :raises DuplicateEntry: the deployable already has that key.
    """
    dep = context.session.get(models.Deployable, deployable_id)
    if dep is None:
        raise exception.Invalid(
            reason='deployable %d does not exist' % deployable_id)
    row = models.Attribute(uuid=uuidutils.generate_uuid(),
                           deployable_id=deployable_id, key=key, value=value)
    context.session.add(row)
    try:
        context.session.flush()
    except db_exc.DBDuplicateEntry as exc:
        raise exception.DuplicateEntry(
            resource='attribute', columns='key',
            value='%s on deployable %d' % (key, deployable_id)) from exc
    return to_object(row), dep.device.uuid


@session.retry_on_conflict
@main.writer
def remove(context, uuid, driver_managed):
    """Delete one attribute unless ``driver_managed(key)``; returns (key,
    device uuid).

    :raises AttributeNotFound: no such attribute.
    :raises DriverManagedAttribute: drivers own its key.
    """
    row = context.session.scalars(sa.select(models.Attribute).where(
        models.Attribute.uuid == uuid)).first()
    if row is None:
        raise exception.AttributeNotFound(uuid=uuid)
    if driver_managed(row.key):
        raise exception.DriverManagedAttribute(key=row.key)
    device_uuid = row.deployable.device.uuid
    context.session.delete(row)
    return row.key, device_uuid
