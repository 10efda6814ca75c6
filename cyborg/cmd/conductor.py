"""cyborg-conductor: the process that owns the database."""

import sys

from oslo_config import cfg

from cyborg import exception
from cyborg import service
from cyborg.conductor import manager

CONF = cfg.CONF


def main(argv=None):
    service.prepare_service(sys.argv[1:] if argv is None else argv)
    try:
        conductor = service.RPCService(
            manager.ConductorManager(CONF.host), CONF.conductor.topic,
            CONF.host, manager.BINARY)
        service.run(conductor)
    except exception.ConfigError as exc:
        service.fail(exc)
