"""cyborg-agent: discovers this host's accelerators and reports them."""

import sys

from oslo_config import cfg

from cyborg import exception
from cyborg import service
from cyborg.agent import manager
from cyborg.agent import metrics
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import indirection_client
from cyborg.objects import base as objects_base

CONF = cfg.CONF


def main(argv=None):
    service.prepare_service(sys.argv[1:] if argv is None else argv)
    # NOTE(agent): the agent holds no database credentials; every object
    # method it calls runs in a conductor.
    objects_base.CyborgObject.indirection_api = (
        indirection_client.ConductorIndirectionAPI())
    try:
        found = manager.AgentManager(CONF.host)
        agent = service.RPCService(found, agent_rpcapi.TOPIC, CONF.host,
                                   manager.BINARY)
        # NOTE(metrics): started after the RPC service, so stopped first.
        service.run(agent, *metrics.services(found))
    except exception.ConfigError as exc:
        service.fail(exc)
