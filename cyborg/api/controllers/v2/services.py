"""``/v2/services`` (2.5): what each device offers; discovery on demand."""

import pecan
from pecan import rest

from cyborg import policy
from cyborg.api import validation_ops
from cyborg.api.controllers.v2 import drivers
from cyborg.api.types import base as types_base
from cyborg.conductor import rpcapi as conductor_rpcapi


class ServicesController(rest.RestController):
    """Services as the drivers discovered them, per device."""

    _custom_actions = {'discover': ['POST']}

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def get_all(self, **params):
        drivers.require_version('GET /v2/services')
        types_base.check_query(params, ('host', 'driver'))
        host, driver = params.get('host'), params.get('driver')
        context = pecan.request.context
        policy.authorize('cyborg:service:get_all', None, context)
        return {'services': conductor_rpcapi.ConductorAPI().list_services(
            context, host=host, driver_name=driver)}

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def discover(self, **_members):
        """``{"host"}`` or ``{}`` (every host); what changed on each."""
        drivers.require_version('POST /v2/services/discover')
        context = pecan.request.context
        policy.authorize('cyborg:service:discover', None, context)
        body = validation_ops.optional(validation_ops.DISCOVER,
                                       drivers.request_body())
        return {'hosts': conductor_rpcapi.ConductorAPI().discover_services(
            context, host=body.get('host'))}
