"""``GET /v2/conductors`` (2.11): conductors, their liveness and clocks."""

import pecan
from pecan import rest

from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api.types import conductor as conductor_types
from cyborg.objects import service as service_obj

CONDUCTOR_BINARY = 'cyborg-conductor'


class ConductorsController(rest.RestController):
    """One entry per host running cyborg-conductor."""

    @expose.expose(conductor_types.ConductorCollection)
    @microversion.versioned('2.11')
    def get_all(self):
        context = pecan.request.context
        policy.authorize('cyborg:conductor:get_all', None, context)
        conductors = service_obj.Service.list(context,
                                              binary=CONDUCTOR_BINARY)
        return conductor_types.ConductorCollection.from_objects(conductors)
