"""cyborg-all-in-one: API, conductor and agent in one process (embedded)."""

import os
import sys

from oslo_config import cfg

from cyborg import embedded_placement
from cyborg import exception
from cyborg import service
from cyborg.agent import manager as agent_manager
from cyborg.agent import metrics as agent_metrics
from cyborg.agent import placement as agent_placement
from cyborg.api import app as api_app
from cyborg.clients import placement as placement_client
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import outage
from cyborg.conf import api as api_conf
from cyborg.conf import key_manager as key_manager_conf
from cyborg.db import api as dbapi
from cyborg.db import migration

CONF = cfg.CONF

# NOTE(embedded): what makes the embedded default need nothing installed:
# oslo.messaging's in-process transport and no authentication. A config file
# may still change everything else (drivers, ports, the database).
_FORCED = {('DEFAULT', 'transport_url'): 'fake:/'}
# NOTE(embedded): signing certificates, when [glance]
# verify_image_signatures is on, come from PEM files: no Barbican here.
_DEFAULTS = {('api', 'auth_strategy'): 'noauth',
             ('key_manager', 'backend'): key_manager_conf.LOCAL_BACKEND}


def _default_state_path():
    base = os.environ.get('XDG_DATA_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'share')
    return os.path.join(base, 'cyborg')


def _configure(argv):
    CONF.set_default('state_path', _default_state_path())
    for (group, name), value in _DEFAULTS.items():
        CONF.set_default(name, value, group=None if group == 'DEFAULT'
                         else group)
    service.prepare_service(argv)
    for (group, name), value in _FORCED.items():
        CONF.set_override(name, value, group=None if group == 'DEFAULT'
                          else group)
    os.makedirs(CONF.state_path, exist_ok=True)


def build_services():
    """The services of the embedded default, in start order.

    Placement comes first (unless [placement] names a real one) so the
    compute node provider exists before the agent's first report.
    """
    dbapi.check_connection()
    migration.upgrade('head')
    services = []
    provider_tree = None
    embedded_client = None
    if not placement_client.configured():
        placement = embedded_placement.EmbeddedPlacement(
            CONF.embedded_placement.host, CONF.embedded_placement.port,
            CONF.embedded_placement.connection,
            compute_nodes=[CONF.agent.resource_provider_name or CONF.host])
        services.append(placement)
        embedded_client = placement.client()
        provider_tree = agent_placement.ProviderTree(
            CONF.host, os.path.join(CONF.state_path,
                                    'agent-%s-placement.json' % CONF.host),
            client=placement.client())
    outage.quiet_pool_resets()
    # NOTE(all-in-one): the conductor reads the embedded Placement too,
    # to explain device profiles.
    conductor = conductor_manager.ConductorManager(
        CONF.host, placement=embedded_client)
    services.append(service.RPCService(
        conductor, CONF.conductor.topic, CONF.host, conductor_manager.BINARY,
        endpoint=outage.GuardedEndpoint(conductor)))
    agent = agent_manager.AgentManager(CONF.host, placement=provider_tree)
    services.append(service.RPCService(
        agent, agent_rpcapi.TOPIC, CONF.host, agent_manager.BINARY))
    services += agent_metrics.services(agent)
    services.append(service.WSGIService(
        'cyborg-api', api_app.setup_app(), CONF.api.host_ip, CONF.api.port,
        api_conf.worker_threads(CONF)))
    return services


def main(argv=None):
    _configure(sys.argv[1:] if argv is None else argv)
    try:
        services = build_services()
        service.run(*services, on_started=lambda: _banner(services))
    except exception.ConfigError as exc:
        service.fail(exc)


def _banner(services):
    api = services[-1]
    if isinstance(services[0], embedded_placement.EmbeddedPlacement):
        placement = '%s  (embedded, %s)' % (
            services[0].url, CONF.embedded_placement.connection)
    else:
        placement = '%s  ([placement] in the configuration)' % (
            CONF.placement.endpoint_override or 'from the service catalog')
    print('Cyborg (embedded) is running.\n'
          '  API:       %s  (try: curl %s/v2/devices)\n'
          '  Placement: %s\n'
          '  State:     %s\n'
          '  Database:  %s\n'
          'Press Ctrl-C to stop.' % (api.url, api.url, placement,
                                     CONF.state_path,
                                     CONF.database.connection), flush=True)
