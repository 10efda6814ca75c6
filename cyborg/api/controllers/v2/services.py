"""``/v2/services`` (2.5): what each device offers; discovery on demand."""

import pecan
from pecan import rest
import wsme.types as wtypes

from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api import validation_ops
from cyborg.api.controllers.v2 import drivers
from cyborg.api.types import base as types_base
from cyborg.api.types import driver as driver_types
from cyborg.conductor import rpcapi as conductor_rpcapi


class ServicesController(rest.RestController):
    """Services as the drivers discovered them, per device."""

    _custom_actions = {'discover': ['POST']}

    @expose.expose(driver_types.ServiceCollection, wtypes.text, wtypes.text)
    @microversion.versioned(drivers.SINCE)
    def get_all(self, host=None, driver=None):
        types_base.check_query(pecan.request.params, ('host', 'driver'))
        context = pecan.request.context
        policy.authorize('cyborg:service:get_all', None, context)
        return driver_types.ServiceCollection.from_entries(
            conductor_rpcapi.for_api().list_services(
                context, host=host, driver_name=driver))

    @expose.expose(driver_types.DiscoveryCollection,
                   body=driver_types.Discover,
                   schema=validation_ops.DISCOVER, body_required=False)
    @microversion.versioned(drivers.SINCE)
    def discover(self, wanted=None):
        """``{"host"}`` or ``{}`` (every host); what changed on each."""
        context = pecan.request.context
        policy.authorize('cyborg:service:discover', None, context)
        host = wanted.host if wanted is not None else None
        return driver_types.DiscoveryCollection.from_entries(
            conductor_rpcapi.for_api().discover_services(
                context, host=None if host is wtypes.Unset else host))
