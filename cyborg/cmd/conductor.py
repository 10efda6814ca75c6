"""cyborg-conductor: the process that owns the database."""

import sys

from oslo_config import cfg

from cyborg import exception
from cyborg import service
from cyborg.conductor import manager
from cyborg.conductor import outage

CONF = cfg.CONF


def main(argv=None):
    service.prepare_service(sys.argv[1:] if argv is None else argv)
    outage.quiet_pool_resets()
    try:
        conductor_manager = manager.ConductorManager(CONF.host)
        conductor = service.RPCService(
            conductor_manager, CONF.conductor.topic, CONF.host,
            manager.BINARY,
            endpoint=outage.GuardedEndpoint(conductor_manager))
        service.run(conductor)
    except exception.ConfigError as exc:
        service.fail(exc)
