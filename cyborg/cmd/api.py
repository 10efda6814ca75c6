"""cyborg-api: the REST API on a threaded WSGI server (cheroot)."""

import sys

from oslo_config import cfg

from cyborg import exception
from cyborg import rpc
from cyborg import service
from cyborg.api import app
from cyborg.objects import base as objects_base
from cyborg.objects import indirection

CONF = cfg.CONF


def main(argv=None):
    service.prepare_service(sys.argv[1:] if argv is None else argv)
    rpc.init(CONF)
    # NOTE(api): the API holds no database credentials; every object method
    # it calls runs in a conductor.
    objects_base.CyborgObject.indirection_api = (
        indirection.ConductorIndirectionAPI())
    try:
        server = service.WSGIService('cyborg-api', app.setup_app(),
                                     CONF.api.host_ip, CONF.api.port,
                                     CONF.api.workers)
        service.run(server, on_started=lambda: print(
            'cyborg-api listening on %s' % server.url, flush=True))
    except exception.ConfigError as exc:
        service.fail(exc)
