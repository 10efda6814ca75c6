"""Attributes operators add to deployables; trait ones reach Placement."""

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg import exception
from cyborg.conductor import lifecycle
from cyborg.db import api as dbapi
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main
from cyborg.objects import attribute as attribute_obj

LOG = logging.getLogger(__name__)


def _object(context, row):
    return attribute_obj.Attribute._from_db_object(
        attribute_obj.Attribute(context), row)


@session.retry_on_conflict
@main.writer
def _insert(context, deployable_id, key, value):
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
    return _object(context, row), dep.device.uuid


@session.retry_on_conflict
@main.writer
def _remove(context, uuid):
    row = context.session.scalars(sa.select(models.Attribute).where(
        models.Attribute.uuid == uuid)).first()
    if row is None:
        raise exception.AttributeNotFound(uuid=uuid)
    if attribute_obj.driver_managed(row.key):
        raise exception.DriverManagedAttribute(key=row.key)
    device_uuid = row.deployable.device.uuid
    context.session.delete(row)
    return row.key, device_uuid


def create(context, deployable_id, key, value, agent_api):
    """Add an attribute; a trait one is added to the provider's traits.

    :raises Invalid: no such deployable.
    :raises DriverManagedAttribute: drivers own that key.
    :raises DuplicateEntry: the deployable already has that key.
    """
    if attribute_obj.driver_managed(key):
        raise exception.DriverManagedAttribute(key=key)
    created, device_uuid = _insert(context, deployable_id, key, value)
    LOG.info('Attribute %s=%s added to deployable %d', key, value,
             deployable_id)
    if attribute_obj.is_trait_key(key):
        _tell(context, device_uuid, agent_api)
    return created


def delete(context, uuid, agent_api):
    """Delete an attribute an operator added (and its trait)."""
    key, device_uuid = _remove(context, uuid)
    LOG.info('Attribute %s (%s) deleted', uuid, key)
    if attribute_obj.is_trait_key(key):
        _tell(context, device_uuid, agent_api)


def _tell(context, device_uuid, agent_api):
    lifecycle.tell_agent(context, dbapi.devices.get(context, device_uuid),
                         agent_api)
