"""Agent RPC endpoints and the periodic discovery and report."""

import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import context as cyborg_context
from cyborg import version
from cyborg.agent import resource_tracker
from cyborg.conductor import rpcapi as conductor_rpcapi

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'


class AgentManager:
    """Endpoints of ``cyborg.agent.rpcapi.AgentAPI`` and the report loop."""

    target = messaging.Target(version='1.0')

    def __init__(self, host, tracker=None):
        self.host = host
        # NOTE(agent): drivers load here, before the service forks or binds
        # anything, so an unknown driver name stops the process at once.
        self.tracker = tracker or resource_tracker.ResourceTracker(host)
        self._lock = threading.Lock()
        self.last_result = None

    def init_host(self):
        self.conductor = conductor_rpcapi.ConductorAPI()

    def periodic_tasks(self):
        return [(CONF.agent.report_interval, self.report)]

    def report(self):
        """Discover every device and send the result to the conductor."""
        with self._lock:
            host_report, failed = self.tracker.discover()
            payload = host_report.to_primitive()
            payload['failed_drivers'] = failed
            payload['version'] = version.version_string()
            context = cyborg_context.get_admin_context()
            try:
                result = self.conductor.report_data(context, self.host,
                                                    payload)
            except messaging.MessagingTimeout:
                LOG.warning('The conductor did not answer the report of %d '
                            'devices; retrying in %d seconds',
                            len(host_report.devices),
                            CONF.agent.report_interval)
                return None
            self.last_result = result
            if result.get('changed'):
                LOG.info('Reported %d devices; the conductor recorded '
                         'changes', len(host_report.devices))
            return result

    # --- RPC endpoints -----------------------------------------------------

    def discover(self, context):
        return self.report()
