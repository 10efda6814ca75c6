"""``GET /v2/agents`` (2.4): the agents and whether they are alive."""

import pecan
from pecan import rest

from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api.types import agent as agent_types
from cyborg.objects import service as service_obj

AGENT_BINARY = 'cyborg-agent'


class AgentsController(rest.RestController):
    """One entry per host running cyborg-agent."""

    @expose.expose(agent_types.AgentCollection)
    @microversion.versioned('2.4')
    def get_all(self):
        context = pecan.request.context
        policy.authorize('cyborg:agent:get_all', None, context)
        agents = service_obj.Service.list(context, binary=AGENT_BINARY)
        return agent_types.AgentCollection.from_objects(agents)
