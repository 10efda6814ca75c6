"""Agent RPC endpoints and the periodic discovery and report."""

import json
import os
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import version
from cyborg.agent import cache as report_cache
from cyborg.agent import resource_tracker
from cyborg.conductor import rpcapi as conductor_rpcapi

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'


class AgentManager:
    """Endpoints of ``cyborg.agent.rpcapi.AgentAPI`` and the report loop."""

    target = messaging.Target(version='1.1')

    def __init__(self, host, tracker=None):
        self.host = host
        # NOTE(agent): drivers load here, before the service binds anything,
        # so an unknown driver name stops the process at once.
        self.tracker = tracker or resource_tracker.ResourceTracker(host)
        self.cache = report_cache.ReportCache(os.path.join(
            CONF.state_path, 'agent-%s-inventory.json' % host))
        self._lock = threading.Lock()
        self._backoff = 0
        self._found = {}
        self.last_result = None
        self.conductor = None

    def init_host(self):
        self.conductor = conductor_rpcapi.ConductorAPI()

    def periodic_tasks(self):
        return [(CONF.agent.report_interval, self.report)]

    # --- Reporting ---------------------------------------------------------

    def report(self):
        """Discover every device and bring the conductor up to date.

        An unchanged host sends a heartbeat; a changed one sends what
        changed; the whole inventory goes only the first time or when the
        conductor's generation is not the one this agent last had applied.

        :returns: seconds until the next pass: sooner than the interval
            (1, 2, 4... seconds) while the conductor does not answer.
        """
        with self._lock:
            host_report, failed = self.tracker.discover()
            self._found = {report_cache.key_of(dev): dev
                           for dev in host_report.devices}
            primitives = host_report.to_primitive()['devices']
            changed, removed, current = self.cache.diff(primitives, failed)
            context = cyborg_context.get_admin_context()
            try:
                if self.cache.generation is None:
                    result = self._send_whole(context, current, failed)
                elif not changed and not removed:
                    result = None
                    if not self.conductor.agent_heartbeat(
                            context, self.host, self.cache.generation,
                            timeout=self._timeout()):
                        LOG.info('The conductor does not hold generation %d '
                                 'of this inventory; sending it whole',
                                 self.cache.generation)
                        result = self._send_whole(context, current, failed)
                else:
                    result = self._send_delta(context, changed, removed,
                                              current, failed)
            except (messaging.MessagingTimeout,
                    messaging.MessageDeliveryFailure) as exc:
                self._backoff = min(self._backoff * 2 or 1,
                                    CONF.agent.report_interval)
                LOG.warning('The conductor did not take the inventory of %d '
                            'devices (%s); retrying in %d seconds',
                            len(current), type(exc).__name__, self._backoff)
                return self._backoff
            self._backoff = 0
        if result is not None:
            self.last_result = result
            self._activate(context, result.get('activate', ()))
        return None

    def _details(self, failed):
        return {'version': version.version_string(),
                'drivers': list(CONF.agent.enabled_drivers),
                'report_interval': CONF.agent.report_interval,
                'failed_drivers': list(failed)}

    def _send_whole(self, context, current, failed):
        generation = (self.cache.generation or 0) + 1
        payload = dict(self._details(failed), host=self.host,
                       devices=list(current.values()), generation=generation)
        result = self.conductor.report_data(context, self.host, payload,
                                            timeout=self._timeout())
        self.cache.applied(generation, current)
        LOG.info('Reported the whole inventory (%d devices), generation %d',
                 len(current), generation)
        return result

    def _send_delta(self, context, changed, removed, current, failed):
        generation = self.cache.generation + 1
        delta = dict(self._details(failed), changed=changed, removed=removed,
                     base_generation=self.cache.generation,
                     generation=generation)
        try:
            result = self.conductor.report_delta(context, self.host, delta,
                                                 timeout=self._timeout())
        except exception.GenerationConflict:
            LOG.info('The conductor is not at generation %d; sending the '
                     'whole inventory', self.cache.generation)
            return self._send_whole(context, current, failed)
        self.cache.applied(generation, current)
        LOG.info('Reported %d changed and %d removed devices, generation %d',
                 len(changed), len(removed), generation)
        return result

    def _activate(self, context, uuids):
        # NOTE(agent): outside the report lock: the conductor calls back
        # into this agent's install_device while activating.
        for uuid in uuids:
            try:
                self.conductor.activate_device(context, uuid)
            except (exception.CyborgException,
                    messaging.MessagingException) as exc:
                LOG.warning('Automatic activation of device %s failed: %s',
                            uuid, exc)

    @staticmethod
    def _timeout():
        # NOTE(agent): a report sent before any conductor listens is lost;
        # waiting the whole rpc_response_timeout for it would delay the
        # first inventory by minutes on a fresh deployment.
        return min(CONF.rpc_response_timeout,
                   max(10, CONF.agent.report_interval))

    # --- RPC endpoints -----------------------------------------------------

    def discover(self, context):
        """RPC: run a discovery pass now and return the conductor's record.
        """
        self.report()
        return self.last_result

    @messaging.expected_exceptions(exception.CyborgException)
    def install_device(self, context, driver_name, cpid_type, cpid_info):
        """RPC: run the driver's install step for one device of this host.
        """
        key = json.dumps([cpid_type, cpid_info])
        device = self._found.get(key)
        if device is None:
            self.report()
            device = self._found.get(key)
        if device is None:
            raise exception.DriverError(
                driver=driver_name,
                reason='device %s is no longer on this host' % cpid_info)
        driver = self.tracker.driver_named(driver_name)
        try:
            driver.install(device)
        except exception.CyborgException:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the operator
            LOG.exception('Install step of %s failed for %s', driver_name,
                          cpid_info)
            raise exception.DriverError(driver=driver_name,
                                        reason=str(exc)) from exc
        LOG.info('Driver %s prepared device %s', driver_name, cpid_info)

