"""OpenStack Placement served in this process, for the embedded default."""

import threading

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg import exception
from cyborg import service
from cyborg.clients import placement as placement_client

LOG = logging.getLogger(__name__)

#: The embedded Placement runs without Keystone (its noauth2 mode), where
#: this token acts as an admin.
ADMIN_TOKEN = 'admin'
_THREADS = 8
_lock = threading.Lock()
_apps = {}


def placement_app(connection):
    """The Placement WSGI application on ``connection``, schema at head.

    Placement configures its database engine once per process, so one
    process serves one Placement database; asking again for the same URL
    returns the same application.
    """
    with _lock:
        if _apps:
            (existing, app), = _apps.items()
            if existing != connection:
                raise exception.ConfigError(
                    option='[embedded_placement] connection',
                    reason='this process already serves Placement on '
                           'another database')
            return app
        try:
            from placement import conf as placement_conf
            from placement import db_api
            from placement import deploy
        except ImportError as exc:
            raise exception.ConfigError(
                option='[embedded_placement]',
                reason='openstack-placement is not installed (pip install '
                       '"openstack-cyborg[embedded]"): %s' % exc) from exc
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf.set_default('connection', connection,
                         group='placement_database')
        conf.set_default('sync_on_startup', True, group='placement_database')
        conf.set_default('auth_strategy', 'noauth2', group='api')
        conf([], project='placement', default_config_files=[])
        db_api.configure(conf)
        try:
            app = deploy.loadapp(conf)
        except Exception as exc:  # noqa: BLE001 - any DB or schema error
            raise exception.ConfigError(
                option='[embedded_placement] connection',
                reason='cannot prepare the Placement database: %s' % exc
            ) from exc
        app = _with_service_role(app)
        _apps[connection] = app
        return app


def _with_service_role(app):
    """``app`` where the admin token also holds the service role.

    NOTE(placement): Placement lets only the service role reshape (POST
    /reshaper, which agents use to change a device's partition mode); its
    noauth2 mode gives the admin token the admin role alone. Anyone may
    present that token here, so the role adds no power; a caller naming
    its roles (X-Roles) keeps them.
    """
    def call(environ, start_response):
        if 'HTTP_X_ROLES' not in environ and \
                environ.get('HTTP_X_AUTH_TOKEN') == ADMIN_TOKEN:
            environ['HTTP_X_ROLES'] = 'admin,service'
        return app(environ, start_response)
    return call


def client_for(url):
    """A Placement client for the embedded Placement at ``url``."""
    session = ks_session.Session(
        auth=token_endpoint.Token(url, ADMIN_TOKEN))
    return placement_client.PlacementClient(
        ks_adapter.Adapter(session, service_type='placement'))


def ensure_compute_node(client, name):
    """The provider Nova's compute service would create for a host."""
    found = client.provider_by_name(name)
    if found is not None:
        return found['uuid']
    created = client.create_provider(uuidutils.generate_uuid(), name, None)
    LOG.info('Created compute node resource provider %s (%s)', name,
             created['uuid'])
    return created['uuid']


class EmbeddedPlacement(service.WSGIService):
    """Placement on its own port, with a compute node provider per host."""

    def __init__(self, host, port, connection, compute_nodes=()):
        super().__init__('placement', placement_app(connection), host, port,
                         _THREADS, option='[embedded_placement] host/port')
        self.compute_nodes = list(compute_nodes)

    def client(self):
        return client_for(self.url)

    def start(self):
        super().start()
        client = self.client()
        for name in self.compute_nodes:
            ensure_compute_node(client, name)
