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
        self._backoff = 0
        self.last_result = None

    def init_host(self):
        self.conductor = conductor_rpcapi.ConductorAPI()

    def periodic_tasks(self):
        return [(CONF.agent.report_interval, self.report)]

    def report(self):
        """Discover every device and send the result to the conductor.

        :returns: seconds until the next report: sooner than the interval
            (1, 2, 4... seconds) while the conductor does not answer.
        """
        with self._lock:
            host_report, failed = self.tracker.discover()
            payload = host_report.to_primitive()
            payload['failed_drivers'] = failed
            payload['version'] = version.version_string()
            context = cyborg_context.get_admin_context()
            try:
                result = self.conductor.report_data(
                    context, self.host, payload, timeout=self._timeout())
            except (messaging.MessagingTimeout,
                    messaging.MessageDeliveryFailure) as exc:
                self._backoff = min(self._backoff * 2 or 1,
                                    CONF.agent.report_interval)
                LOG.warning('The conductor did not take the report of %d '
                            'devices (%s); retrying in %d seconds',
                            len(host_report.devices),
                            type(exc).__name__, self._backoff)
                return self._backoff
            self._backoff = 0
            self.last_result = result
            if result.get('changed'):
                LOG.info('Reported %d devices; the conductor recorded '
                         'changes', len(host_report.devices))
            return None

    @staticmethod
    def _timeout():
        # NOTE(agent): a report sent before any conductor listens is lost;
        # waiting the whole rpc_response_timeout for it would delay the
        # first inventory by minutes on a fresh deployment.
        return min(CONF.rpc_response_timeout,
                   max(10, CONF.agent.report_interval))

    def discover(self, context):
        """RPC: run a discovery pass now and return the conductor's record.
        """
        self.report()
        return self.last_result

