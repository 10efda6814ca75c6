"""The health loop: failed devices excluded, healthy ones returned."""

from oslo_config import cfg
from oslo_log import log as logging

from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.db import api as dbapi
from cyborg.db import device_health

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def recover(context, agent_api):
    """Return the devices healthy for ``[conductor] health_recover_after``
    checks to the status they had, and have their agents free them in
    Placement; how many."""
    changes = device_health.recover(context, inventory.AGENT_BINARY,
                                    CONF.conductor.health_recover_after)
    for change in changes:
        LOG.info('Device %s on %s has been healthy for %d checks; it is %s '
                 'again', change.uuid, change.hostname,
                 CONF.conductor.health_recover_after, change.status)
        lifecycle.tell_agent(context, dbapi.devices.get(context, change.uuid),
                             agent_api)
        inventory.notify_change(context, change)
    return len(changes)
