"""cyborg-api: the REST API on a threaded WSGI server (cheroot)."""

import sys

from oslo_config import cfg

from cyborg import exception
from cyborg import service
from cyborg.api import app
from cyborg.conf import api as api_conf

CONF = cfg.CONF


def main(argv=None):
    try:
        # NOTE(api): a policy file that does not parse is a configuration
        # error found while the application is built.
        application = app.init_application(sys.argv[1:] if argv is None
                                           else argv)
        server = service.WSGIService('cyborg-api', application,
                                     CONF.api.host_ip, CONF.api.port,
                                     api_conf.worker_threads(CONF))
        service.run(server, on_started=lambda: print(
            'cyborg-api listening on %s' % server.url, flush=True))
    except exception.ConfigError as exc:
        service.fail(exc)
