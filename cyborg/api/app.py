"""Builds the API's WSGI application: pecan plus middleware, in code."""

import gc

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
from oslo_middleware import sizelimit
import pecan

from cyborg import conf as cyborg_conf
from cyborg import policy
from cyborg import version
from cyborg.api import access_log
from cyborg.api import body
from cyborg.api import errors
from cyborg.api import hooks
from cyborg.api import microversion
from cyborg.api.controllers import root

LOG = logging.getLogger(__name__)

HEALTHCHECK_PATH = '/healthcheck'
# Routes answered without a token: version discovery.
PUBLIC_PATHS = ('/', '/v2')

# NOTE(auth): identity headers keystonemiddleware would set after checking
# a token; on public routes no token is checked, so a client must not be
# able to supply them there either.
_IDENTITY_PREFIXES = ('HTTP_X_IDENTITY_STATUS', 'HTTP_X_SERVICE_',
                      'HTTP_X_DOMAIN_', 'HTTP_X_PROJECT_', 'HTTP_X_USER',
                      'HTTP_X_ROLE', 'HTTP_X_TENANT', 'HTTP_X_SYSTEM_SCOPE',
                      'HTTP_X_IS_ADMIN_PROJECT')

# Headers browsers may send to, and read from, the API across origins.
_CORS_ALLOW_HEADERS = ['X-Auth-Token', 'X-OpenStack-Request-ID',
                       microversion.HEADER]
_CORS_EXPOSE_HEADERS = ['X-OpenStack-Request-ID', microversion.HEADER,
                        microversion.MIN_HEADER, microversion.MAX_HEADER]


class _PublicRoutes:
    """Sends public paths straight to the app, the rest through auth."""

    def __init__(self, application, protected):
        self.application = application
        self.protected = protected

    def __call__(self, environ, start_response):
        path = '/' + environ.get('PATH_INFO', '').strip('/')
        if path in PUBLIC_PATHS:
            for key in [key for key in environ
                        if key.startswith(_IDENTITY_PREFIXES)]:
                del environ[key]
            return self.application(environ, start_response)
        return self.protected(environ, start_response)


class _HealthcheckRoute:
    """Answers ``/healthcheck`` with oslo.middleware's healthcheck."""

    def __init__(self, application, conf):
        self.application = application
        # NOTE(healthcheck): the healthcheck wraps the app too, so a request
        # it declines (outside allowed_source_ranges) gets the API's 404.
        self.healthcheck = healthcheck.Healthcheck(application, conf)

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '').rstrip('/') == HEALTHCHECK_PATH:
            return self.healthcheck(environ, start_response)
        return self.application(environ, start_response)


def _pecan_app(conf):
    # NOTE(middleware): no on_error hook: what a handler or hook raises
    # leaves pecan for errors.FaultMiddleware, the one place errors are
    # answered.
    return pecan.make_app(
        root.RootController(),
        hooks=[hooks.ContextHook(noauth=conf.api.auth_strategy == 'noauth'),
               hooks.MicroversionHook()],
        debug=False,
        force_canonical=False,
        guess_content_type_from_ext=False)


def setup_app(conf=None):
    """The API's WSGI application, middleware included.

    :param conf: the ConfigOpts to read; ``cyborg.conf.CONF`` by default.
    """
    conf = cyborg_conf.CONF if conf is None else conf
    # NOTE(policy): a policy file that does not parse stops the service
    # here, naming the file and the line; later, a bad edit keeps the last
    # good rules in force.
    policy.check_startup(conf)
    app = _pecan_app(conf)
    # NOTE(middleware): listed from the innermost out; a request meets them
    # in the reverse order.
    # - Bodies are checked to be JSON before pecan, webob and WSME parse
    #   them (they fail in their own ways), after auth and the size limit.
    app = body.JsonBodyGuard(app)
    # - auth_token only guards the non-public routes; "/" and "/v2" (version
    #   discovery) bypass it, as clients discover before authenticating.
    if conf.api.auth_strategy == 'keystone':
        app = _PublicRoutes(app, auth_token.AuthProtocol(
            app, {'oslo_config_config': conf}))
    # - The size limit refuses big bodies before anything reads them.
    app = sizelimit.RequestBodySizeLimiter(app, conf)
    # - The one place errors are answered, outside auth and the size limit
    #   so that their 401 and 413 reach clients in the same envelope as
    #   every exception raised below.
    app = errors.FaultMiddleware(app)
    # - The version headers go on every /v2 response, errors included.
    app = microversion.HeadersMiddleware(app)
    # - The healthcheck answers before auth: load balancers have no token.
    app = _HealthcheckRoute(app, conf)
    # - Every request is logged with its answer, its time and its id.
    app = access_log.AccessLog(app, HEALTHCHECK_PATH)
    # - Request ids go on every response, errors and healthchecks included.
    app = request_id.RequestId(app, conf)
    # - CORS must see (and answer) preflight requests before anything else
    #   can refuse them, and add its headers to every response.
    cors.set_defaults(allow_headers=_CORS_ALLOW_HEADERS,
                      expose_headers=_CORS_EXPOSE_HEADERS,
                      allow_methods=['GET', 'PUT', 'POST', 'DELETE',
                                     'PATCH'])
    app = cors.CORS(app, conf)
    # - Outermost, the proxy's X-Forwarded-* headers rewrite the request's
    #   URL first, so links and CORS see what the client used.
    if conf.api.enable_proxy_headers_parsing:
        app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
        # NOTE(middleware): [api] enable_proxy_headers_parsing is the switch;
        # the middleware reads its own option, defaulted on here so that an
        # explicit [oslo_middleware] setting still wins.
        conf.set_default('enable_proxy_headers_parsing', True,
                         group='oslo_middleware')
    return app


def init_application(argv=None, default_config_files=None):
    """Everything an API process does before serving, then the app.

    Used by ``cyborg.wsgi.api`` and the ``cyborg-api`` command.

    :param argv: command-line arguments (without the program name).
    :param default_config_files: configuration files to read; None means
        oslo.config's standard locations (/etc/cyborg/cyborg.conf...).
    """
    # NOTE(startup): imported here so that building the app for tests
    # needs no RPC; the API reaches the database only through the
    # conductor, by object indirection.
    from cyborg import rpc
    from cyborg import service
    from cyborg.conductor import indirection_client
    from cyborg.conductor import rpcapi as conductor_rpcapi
    from cyborg.objects import base as objects_base

    service.prepare_service([] if argv is None else argv,
                            default_config_files=default_config_files)
    conf = cyborg_conf.CONF
    conf.log_opt_values(LOG, logging.DEBUG)
    rpc.init(conf)
    objects_base.CyborgObject.indirection_api = (
        indirection_client.ConductorIndirectionAPI(conductor_rpcapi.for_api))
    LOG.info('Cyborg API %s starting; microversions %s to %s.',
             version.version_string(), microversion.MIN_VERSION_STRING,
             microversion.MAX_VERSION_STRING)
    application = setup_app(conf)
    # NOTE(startup): what is loaded by now lives as long as the process;
    # out of the collector's sight, it is not walked again by each full
    # collection, which rendering a list of thousands of items sets off
    # every few requests (tens of milliseconds each).
    gc.freeze()
    return application
