"""The agent's report loop: discovery to the conductor, then Placement."""

import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import version
from cyborg.agent import cache as report_cache
from cyborg.agent import driver_ops
from cyborg.drivers.report import DeviceKey

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class Reporter:
    """The report half of ``AgentManager``: what it sends and applies.

    It uses the manager's ``host``, ``tracker``, ``cache``, ``placement``,
    ``conductor`` and ``_lock``.
    """

    def report(self):
        """Discover every device; bring the conductor and Placement up to date.

        An unchanged host sends a heartbeat; a changed one sends what
        changed (nothing, but its new versions, after an upgrade); the whole
        inventory goes only the first time or when the conductor's
        generation is not the one this agent last had applied.
        Placement is then written with what changed (nothing when nothing
        did), or healed when ``[agent] placement_heal_interval`` is due.

        :returns: seconds until the next pass: sooner than the interval
            (1, 2, 4... seconds) while the conductor or Placement does not
            answer.
        """
        with self._lock:
            passed = self._report_locked()
        return self._after_report(*passed)

    def _report_locked(self):
        """The part of a report pass that holds ``_lock``: discovery, the
        conductor, Placement. Its value is for ``_after_report``."""
        host_report, failed = self.tracker.discover()
        self._found = {report_cache.key_of(dev): dev
                       for dev in host_report.devices}
        primitives = host_report.to_primitive()['devices']
        changed, removed, current = self.cache.diff(primitives, failed)
        self._current = current
        context = cyborg_context.get_admin_context()
        result, conductor_delay = self._report_to_conductor(
            context, changed, removed, current, failed)
        placement_delay = self._sync_placement(
            context, current, statuses_fresh=result is not None)
        return context, result, conductor_delay, placement_delay

    def _after_report(self, context, result, conductor_delay,
                      placement_delay):
        """What a pass does once ``_lock`` is released: what the
        conductor's answer asks for; returns ``report``'s value."""
        if result is not None:
            self.last_result = result
            self._activate(context, result.get('activate', ()))
            if self._install(result.get('install', ())):
                # NOTE(agent): the outcomes go to the conductor at once, in
                # a report of their own; the new devices are not yet ready.
                return self.report()
        delays = [d for d in (conductor_delay, placement_delay)
                  if d is not None]
        return min(delays) if delays else None

    def _report_to_conductor(self, context, changed, removed, current,
                             failed):
        released = sorted(self.placement.released - set(current)) \
            if self.placement else []
        removed_keys = {DeviceKey.parse(k).text() for k in removed}
        removed = removed + [DeviceKey.parse(k).wire() for k in released
                             if k not in removed_keys]
        held = self._held(removed)
        try:
            if self.cache.generation is None:
                result = self._send_whole(context, current, failed, held)
            elif (not changed and not removed and not self.installed and
                  self.cache.identity == self._identity()):
                result = None
                if not self.conductor.agent_heartbeat(
                        context, self.host, self.cache.generation,
                        timeout=self._timeout()):
                    LOG.info('The conductor does not hold generation %d '
                             'of this inventory; sending it whole',
                             self.cache.generation)
                    result = self._send_whole(context, current, failed,
                                              held)
            else:
                # NOTE(agent): also when nothing changed but this agent's
                # versions did (it was upgraded): heartbeats do not carry
                # them, and the upgrade checks read them.
                result = self._send_delta(context, changed, removed,
                                          current, failed, held)
        except (messaging.MessagingTimeout,
                messaging.MessageDeliveryFailure,
                exception.ServiceUnavailable) as exc:
            # NOTE(agent): ServiceUnavailable: the conductor answered that
            # its database is down; like a silent conductor, that passes.
            self._backoff = min(self._backoff * 2 or 1,
                                CONF.agent.report_interval)
            LOG.warning('The conductor did not take the inventory of %d '
                        'devices (%s); retrying in %d seconds',
                        len(current), _why(exc), self._backoff)
            return None, self._backoff
        except exception.Invalid as exc:
            # NOTE(agent): the conductor turned this inventory away (a
            # driver reports one device twice, or another host's name);
            # sending it again sooner would not change the answer.
            LOG.error('The conductor refused the inventory of %d devices: '
                      '%s', len(current), exc)
            return None, None
        self._backoff = 0
        if released:
            self.placement.forget_released(released)
        if result is not None and self.placement is not None:
            self.placement.set_statuses(*recorded(result), replace=True)
        return result, None

    def _held(self, removed):
        """Vanished devices Placement still has allocations on."""
        if not removed or self.placement is None:
            return []
        keys = [DeviceKey.parse(key).text() for key in removed]
        return [DeviceKey.parse(k).wire()
                for k in sorted(self.placement.held(keys))]

    def _sync_placement(self, context, current, statuses_fresh=False):
        """Write (or heal) this host's providers; returns a retry delay.

        :param statuses_fresh: the conductor just answered a report with
            every device's status, so a heal need not ask for them again.
        """
        if self.placement is None:
            return None
        healing = time.monotonic() >= self._heal_due
        try:
            if healing:
                if not statuses_fresh:
                    self._refresh_statuses(context)
                failed = self.placement.heal(current)
            else:
                failed = self.placement.sync(current)
        except exception.ResourceProviderNotFound as exc:
            failed, reason = -1, str(exc)
        except exception.CyborgException as exc:
            failed, reason = -1, '%s: %s' % (type(exc).__name__, exc)
        if failed == 0:
            self._placement_backoff = 0
            if healing:
                interval = CONF.agent.placement_heal_interval
                self._heal_due = (time.monotonic() + interval if interval
                                  else float('inf'))
            return None
        self._placement_backoff = min(self._placement_backoff * 2 or 1,
                                      CONF.agent.report_interval)
        if failed > 0:
            reason = '%d providers could not be written' % failed
        LOG.error('Placement is not up to date for this host (%s); '
                  'retrying in %d seconds', reason, self._placement_backoff)
        return self._placement_backoff

    def _refresh_statuses(self, context):
        try:
            devices = self.conductor.device_states(context, self.host,
                                                   timeout=self._timeout())
        except messaging.MessagingException as exc:
            LOG.info('Using the device statuses last received: the conductor '
                     'did not answer (%s)', type(exc).__name__)
            return
        self.placement.set_statuses(*recorded({'devices': devices}),
                                    replace=True)

    def _identity(self):
        """This agent's release, the RPC API version it serves and the
        drivers that scrub between tenants.

        NOTE(scrub): heartbeats carry none of these; a change of any (an
        upgrade, a reloaded scrub_on_release) sends a report.
        """
        return {'version': version.version_string(),
                'rpc_version': self.target.version,
                'scrubbing_drivers': driver_ops.scrubbing_drivers(
                    self.tracker)}

    def _details(self, failed):
        return dict(driver_ops.details(self.tracker), **self._identity(),
                    report_interval=CONF.agent.report_interval,
                    failed_drivers=list(failed))

    def _send_whole(self, context, current, failed, held):
        generation = (self.cache.generation or 0) + 1
        installed = dict(self.installed)
        payload = dict(self._details(failed), host=self.host,
                       devices=list(current.values()), generation=generation,
                       held=held, installed=installed)
        try:
            result = self.conductor.report_data(context, self.host, payload,
                                                timeout=self._timeout())
        except exception.StaleReport as exc:
            # NOTE(agent): this agent's cache is older than what the
            # conductor holds (it was restored or lost); its inventory is
            # current, so it goes again under a newer generation.
            generation = exc.kwargs['current'] + 1
            LOG.info('The conductor holds a newer generation of this '
                     'inventory (%d); sending it as %d',
                     exc.kwargs['current'], generation)
            payload['generation'] = generation
            result = self.conductor.report_data(context, self.host, payload,
                                                timeout=self._timeout())
        self.cache.applied(generation, current, self._identity())
        self._sent(installed)
        LOG.info('Reported the whole inventory (%d devices), generation %d',
                 len(current), generation)
        return result

    def _send_delta(self, context, changed, removed, current, failed, held):
        generation = self.cache.generation + 1
        installed = dict(self.installed)
        delta = dict(self._details(failed), changed=changed, removed=removed,
                     held=held, base_generation=self.cache.generation,
                     generation=generation, installed=installed)
        try:
            result = self.conductor.report_delta(context, self.host, delta,
                                                 timeout=self._timeout())
        except exception.GenerationConflict:
            LOG.info('The conductor is not at generation %d; sending the '
                     'whole inventory', self.cache.generation)
            return self._send_whole(context, current, failed, held)
        self.cache.applied(generation, current, self._identity())
        self._sent(installed)
        LOG.info('Reported %d changed and %d removed devices, generation %d',
                 len(changed), len(removed), generation)
        return result

    def _sent(self, installed):
        for uuid in installed:
            self.installed.pop(uuid, None)

    def _install(self, wanted):
        """Run the install step of the new devices the conductor names
        (``install`` in its answer; it marked them activating); their
        outcomes wait in ``installed`` for the next report.

        :returns: whether any ran.
        """
        for item in wanted:
            key = DeviceKey.parse(item['controlpath'])
            device = self._found.get(key.text())
            try:
                if device is None:
                    raise exception.DriverError(
                        driver=item['driver_name'],
                        reason='device %s is no longer on this host'
                        % key.text())
                driver = self.tracker.driver_named(item['driver_name'])
                self._run(item['driver_name'],
                          'Install step of %s' % key.text(), driver.install,
                          device)
            except exception.CyborgException as exc:
                LOG.warning('The install step of new device %s failed: %s',
                            item['uuid'], exc)
                self.installed[item['uuid']] = str(exc)
            else:
                LOG.info('Driver %s prepared new device %s',
                         item['driver_name'], item['uuid'])
                self.installed[item['uuid']] = None
        return bool(wanted)

    def _activate(self, context, uuids):
        # NOTE(agent): what a conductor older than agent RPC 1.6 answers.
        # Outside the report lock: the conductor calls back into this
        # agent's install_device while activating.
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


def recorded(result):
    """Device key -> status, device key -> operators' traits per
    deployable, device key -> deployables attached through /v1 (these
    three for the fallback), and device key -> the conductor's decision
    per deployable's provider, from what the conductor answered."""
    statuses, traits, taken, decided = {}, {}, {}, {}
    for device in result.get('devices', ()):
        key = DeviceKey.parse(device['controlpath']).text()
        statuses[key] = device['status']
        if device.get('traits'):
            traits[key] = device['traits']
        if device.get('taken'):
            taken[key] = device['taken']
        if device.get('providers'):
            decided[key] = device['providers']
    return statuses, traits, taken, decided


def _why(exc):
    """A short reason for a failed report: the error's name, or what the
    conductor said."""
    if isinstance(exc, exception.CyborgException):
        # NOTE(agent): str() of an error rebuilt from a conductor's answer
        # holds the conductor's traceback; the message is enough here.
        return exc.message
    return type(exc).__name__
