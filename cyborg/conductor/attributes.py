"""Attributes operators add to deployables; trait ones reach Placement."""

from oslo_log import log as logging

from cyborg import exception
from cyborg.conductor import lifecycle
from cyborg.db import api as dbapi
from cyborg.db import attributes as attribute_db
from cyborg.objects import attribute as attribute_obj

LOG = logging.getLogger(__name__)


def _object(context, row):
    return attribute_obj.Attribute._from_db_object(
        attribute_obj.Attribute(context), row)


def create(context, deployable_id, key, value, agent_api):
    """Add an attribute; a trait one is added to the provider's traits.

    :raises Invalid: no such deployable.
    :raises DriverManagedAttribute: drivers own that key.
    :raises DuplicateEntry: the deployable already has that key.
    """
    if attribute_obj.driver_managed(key):
        raise exception.DriverManagedAttribute(key=key)
    created, device_uuid = attribute_db.insert(
        context, deployable_id, key, value, lambda row: _object(context, row))
    LOG.info('Attribute %s=%s added to deployable %d', key, value,
             deployable_id)
    if attribute_obj.is_trait_key(key):
        _tell(context, device_uuid, agent_api)
    return created


def delete(context, uuid, agent_api):
    """Delete an attribute an operator added (and its trait)."""
    key, device_uuid = attribute_db.remove(
        context, uuid, attribute_obj.driver_managed)
    LOG.info('Attribute %s (%s) deleted', uuid, key)
    if attribute_obj.is_trait_key(key):
        _tell(context, device_uuid, agent_api)


def _tell(context, device_uuid, agent_api):
    lifecycle.tell_agent(context, dbapi.devices.get(context, device_uuid),
                         agent_api)
