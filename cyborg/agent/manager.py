"""Agent RPC endpoints and the periodic discovery and report."""

import contextlib
import json
import os
import threading
import time

from oslo_concurrency import lockutils
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import version
from cyborg.agent import cache as report_cache
from cyborg.agent import driver_ops
from cyborg.agent import placement as agent_placement
from cyborg.agent import resource_tracker
from cyborg.clients import glance
from cyborg.clients import placement as placement_client
from cyborg.conductor import rpcapi as conductor_rpcapi

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'


class AgentManager:
    """Endpoints of ``cyborg.agent.rpcapi.AgentAPI`` and the report loop."""

    target = messaging.Target(version='1.5')

    def __init__(self, host, tracker=None, placement=None):
        self.host = host
        self.driver_choices = driver_ops.DriverChoices(host)
        # NOTE(agent): drivers load here, before the service binds anything,
        # so an unknown driver name stops the process at once.
        self.tracker = tracker or resource_tracker.ResourceTracker(
            host, self.driver_choices.names())
        self.cache = report_cache.ReportCache(os.path.join(
            CONF.state_path, 'agent-%s-inventory.json' % host))
        self.handles = report_cache.HandleCache(os.path.join(
            CONF.state_path, 'agent-%s-handles.json' % host))
        self._lock = threading.Lock()
        self._backoff = 0
        self._found = {}
        self._current = None
        self.last_result = None
        self.conductor = None
        self.placement = placement or self._provider_tree(host)
        self._placement_backoff = 0
        # NOTE(agent): the first pass heals: Placement may have changed
        # while this agent was down.
        self._heal_due = 0.0

    @staticmethod
    def _provider_tree(host):
        if not placement_client.configured():
            LOG.warning('[placement] auth_type is not set: this agent does '
                        'not write its accelerators to Placement, so the '
                        'scheduler cannot place instances on them')
            return None
        return agent_placement.ProviderTree(host, os.path.join(
            CONF.state_path, 'agent-%s-placement.json' % host))

    def init_host(self):
        self.conductor = conductor_rpcapi.ConductorAPI()

    def periodic_tasks(self):
        return [(CONF.agent.report_interval, self.report)]

    # --- Reporting ---------------------------------------------------------

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
        if result is not None:
            self.last_result = result
            self._activate(context, result.get('activate', ()))
        delays = [d for d in (conductor_delay, placement_delay)
                  if d is not None]
        return min(delays) if delays else None

    def _report_to_conductor(self, context, changed, removed, current,
                             failed):
        released = sorted(self.placement.released - set(current)) \
            if self.placement else []
        removed_keys = {json.dumps(k) for k in removed}
        removed = removed + [json.loads(k) for k in released
                             if k not in removed_keys]
        held = self._held(removed)
        try:
            if self.cache.generation is None:
                result = self._send_whole(context, current, failed, held)
            elif (not changed and not removed and
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
            self.placement.set_statuses(*_recorded(result), replace=True)
        return result, None

    def _held(self, removed):
        """Vanished devices Placement still has allocations on."""
        if not removed or self.placement is None:
            return []
        keys = [json.dumps(list(key)) for key in removed]
        return [json.loads(k) for k in sorted(self.placement.held(keys))]

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
        self.placement.set_statuses(*_recorded({'devices': devices}),
                                    replace=True)

    def _identity(self):
        """This agent's release and the RPC API version it serves."""
        return {'version': version.version_string(),
                'rpc_version': self.target.version}

    def _details(self, failed):
        return dict(driver_ops.details(self.tracker), **self._identity(),
                    report_interval=CONF.agent.report_interval,
                    failed_drivers=list(failed))

    def _send_whole(self, context, current, failed, held):
        generation = (self.cache.generation or 0) + 1
        payload = dict(self._details(failed), host=self.host,
                       devices=list(current.values()), generation=generation,
                       held=held)
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
        LOG.info('Reported the whole inventory (%d devices), generation %d',
                 len(current), generation)
        return result

    def _send_delta(self, context, changed, removed, current, failed, held):
        generation = self.cache.generation + 1
        delta = dict(self._details(failed), changed=changed, removed=removed,
                     held=held, base_generation=self.cache.generation,
                     generation=generation)
        try:
            result = self.conductor.report_delta(context, self.host, delta,
                                                 timeout=self._timeout())
        except exception.GenerationConflict:
            LOG.info('The conductor is not at generation %d; sending the '
                     'whole inventory', self.cache.generation)
            return self._send_whole(context, current, failed, held)
        self.cache.applied(generation, current, self._identity())
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

    def update_device_states(self, context, devices):
        """RPC: the conductor changed device statuses; reserve or free them.

        :param devices: ``[{'controlpath': [type, info], 'status': ...}]``
        :returns: whether Placement now holds them; None when this agent
            does not use Placement.
        """
        if self.placement is None:
            return None
        with self._lock:
            self.placement.set_statuses(*_recorded({'devices': devices}))
            delay = self._sync_placement(
                context, self.cache.devices if self._current is None
                else self._current)
        return delay is None

    def discover(self, context):
        """RPC: run a discovery pass now and return the conductor's record.
        """
        self.report()
        return self.last_result

    def _device(self, driver_name, cpid_type, cpid_info):
        key = json.dumps([cpid_type, cpid_info])
        device = self._found.get(key)
        if device is None:
            self.report()
            device = self._found.get(key)
        if device is None:
            raise exception.DriverError(
                driver=driver_name,
                reason='device %s is no longer on this host' % cpid_info)
        return device

    def _run(self, driver_name, what, call, *args):
        """Run a driver operation; anything it raises becomes DriverError.
        """
        try:
            return call(*args)
        except exception.CyborgException:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the operator
            LOG.exception('%s failed (driver %s)', what, driver_name)
            raise exception.DriverError(driver=driver_name,
                                        reason=str(exc)) from exc
        finally:
            # NOTE(discovery_cache): an operation may change what sysfs
            # cannot show changed (a new bitstream's ids); done or failed
            # halfway, the next pass reads the host again.
            self.tracker.invalidate()

    @messaging.expected_exceptions(exception.CyborgException)
    def install_device(self, context, driver_name, cpid_type, cpid_info):
        """RPC: run the driver's install step for one device of this host.
        """
        device = self._device(driver_name, cpid_type, cpid_info)
        driver = self.tracker.driver_named(driver_name)
        self._run(driver_name, 'Install step of %s' % cpid_info,
                  driver.install, device)
        LOG.info('Driver %s prepared device %s', driver_name, cpid_info)

    @messaging.expected_exceptions(exception.CyborgException)
    def program(self, context, driver_name, cpid_type, cpid_info,
                deployable_name, image_id):
        """RPC: download a Glance image and load it onto a deployable.

        Then a discovery pass reports what the device now offers (its new
        function) to the conductor and to Placement.
        """
        device, dep = self._deployable(driver_name, cpid_type, cpid_info,
                                       deployable_name)
        driver = self.tracker.driver_named(driver_name)
        # NOTE(agent): one programming at a time per device; a second
        # image loaded meanwhile would leave it in an unknown state.
        with lockutils.lock('program-%s-%s' % (cpid_type, cpid_info)), \
                _downloaded(image_id) as path:
            self._run(driver_name, 'Programming %s' % deployable_name,
                      driver.program, device, dep, path)
        LOG.info('Programmed %s with image %s', deployable_name, image_id)
        self.report()

    @messaging.expected_exceptions(exception.CyborgException)
    def prepare_handle(self, context, driver_name, attach_type, attach_info,
                       handle_uuid, arq_uuid=None):
        """RPC: make an attach handle ready at bind (create its mdev), once
        per ARQ: a conductor that took a bind over asks again."""
        driver = self.tracker.driver_named(driver_name)
        with lockutils.lock('handle-%s' % handle_uuid):
            if arq_uuid is not None and \
                    self.handles.holder(handle_uuid) == arq_uuid:
                LOG.info('Handle %s is already prepared for ARQ %s',
                         handle_uuid, arq_uuid)
                return
            self._run(driver_name, 'Preparing handle %s' % handle_uuid,
                      driver.prepare_handle, attach_type, attach_info,
                      handle_uuid)
            self.handles.hold(handle_uuid, arq_uuid)
            LOG.info('Prepared handle %s for ARQ %s', handle_uuid, arq_uuid)

    @messaging.expected_exceptions(exception.CyborgException)
    def release_handle(self, context, driver_name, attach_type, attach_info,
                       handle_uuid, arq_uuid=None):
        """RPC: undo prepare_handle once the handle is unbound, unless it
        is now prepared for another ARQ than ``arq_uuid``."""
        driver = self.tracker.driver_named(driver_name)
        with lockutils.lock('handle-%s' % handle_uuid):
            holder = self.handles.holder(handle_uuid)
            if arq_uuid is not None and holder not in (None, arq_uuid):
                LOG.info('Not releasing handle %s for ARQ %s: ARQ %s holds '
                         'it now', handle_uuid, arq_uuid, holder)
                return
            self._run(driver_name, 'Releasing handle %s' % handle_uuid,
                      driver.release_handle, attach_type, attach_info,
                      handle_uuid)
            self.handles.forget(handle_uuid)

    # --- Attach to a host, and drivers (1.4) -------------------------------

    def _deployable(self, driver_name, cpid_type, cpid_info, name):
        device = self._device(driver_name, cpid_type, cpid_info)
        for dep in device.deployables:
            if dep.name == name:
                return device, dep
        raise exception.DriverError(driver=driver_name, reason='%s has no '
                                    'deployable %s' % (cpid_info, name))

    def _check_free(self, uuid, name):
        consumers = self.placement.consumers(name)
        if consumers:
            raise exception.AcceleratorAllocated(
                uuid=uuid, consumers=', '.join(consumers))

    def _take(self, context, key, name, taken):
        self.placement.take(key, name, taken)
        self._sync_placement(context, self.cache.devices
                             if self._current is None else self._current)

    @messaging.expected_exceptions(exception.CyborgException)
    def attach(self, context, uuid, driver_name, cpid_type, cpid_info,
               deployable_name, host_use):
        """RPC: take a deployable out of the scheduler's hands (reserved in
        Placement) and, for the host's own use, have the driver prepare it.

        :raises AcceleratorAllocated: Placement holds allocations on it.
        :raises DriverError: the driver could not; nothing is reserved.
        """
        device, dep = self._deployable(driver_name, cpid_type, cpid_info,
                                       deployable_name)
        key = json.dumps([cpid_type, cpid_info])
        with self._lock:
            if self.placement is not None:
                self._check_free(uuid, deployable_name)
                self._take(context, key, deployable_name, True)
        if not host_use:
            return
        driver = self.tracker.driver_named(driver_name)
        try:
            self._run(driver_name, 'Attaching %s to the host' %
                      deployable_name, driver.attach_host, device, dep)
        except exception.CyborgException:
            if self.placement is not None:
                with self._lock:
                    self._take(context, key, deployable_name, False)
            raise
        LOG.info('Deployable %s is attached to this host', deployable_name)

    @messaging.expected_exceptions(exception.CyborgException)
    def detach(self, context, uuid, driver_name, cpid_type, cpid_info,
               deployable_name, host_use):
        """RPC: undo ``attach`` (the conductor checked ``consumers``)."""
        device, dep = self._deployable(driver_name, cpid_type, cpid_info,
                                       deployable_name)
        key = json.dumps([cpid_type, cpid_info])
        if host_use:
            driver = self.tracker.driver_named(driver_name)
            self._run(driver_name, 'Detaching %s from the host' %
                      deployable_name, driver.detach_host, device, dep)
        if self.placement is not None:
            with self._lock:
                self._take(context, key, deployable_name, False)
        LOG.info('Deployable %s is detached', deployable_name)

    @messaging.expected_exceptions(exception.CyborgException)
    def consumers(self, context, deployable_name):
        """RPC: consumers with allocations on a deployable's provider;
        none when this agent does not use Placement."""
        if self.placement is None:
            return []
        return self.placement.consumers(deployable_name)

    def _rediscover(self):
        self.report()
        return dict(driver_ops.details(self.tracker),
                    devices=(self.last_result or {}).get('devices', []))

    @messaging.expected_exceptions(exception.CyborgException)
    def install_driver(self, context, name):
        """RPC: load, install and enable a driver; then discover with it.
        """
        with self._lock:
            driver_ops.install(self.tracker, self.driver_choices, self.host,
                               name)
        return self._rediscover()

    @messaging.expected_exceptions(exception.CyborgException)
    def uninstall_driver(self, context, name):
        """RPC: stop using a driver; its devices leave with the next
        report (now)."""
        with self._lock:
            driver_ops.uninstall(self.tracker, self.driver_choices,
                                 self.host, name)
        return self._rediscover()

    @messaging.expected_exceptions(exception.CyborgException)
    def update_driver(self, context, name, image_id=None):
        """RPC: reload a driver's options, or load an image through it."""
        with _downloaded(image_id) as path, self._lock:
            driver_ops.update(self.tracker, self.host, name,
                              list(self._found.values()), path)
        return self._rediscover()


@contextlib.contextmanager
def _downloaded(image_id):
    """A Glance image in a local file for the duration (None: no image)."""
    if image_id is None:
        yield None
        return
    path = glance.GlanceClient().download(image_id, CONF.state_path)
    try:
        yield path
    finally:
        os.unlink(path)


def _recorded(result):
    """Device key -> status, device key -> operators' traits per
    deployable, and device key -> deployables attached through /v1, from
    what the conductor recorded."""
    statuses, traits, taken = {}, {}, {}
    for device in result.get('devices', ()):
        key = json.dumps(list(device['controlpath']))
        statuses[key] = device['status']
        if device.get('traits'):
            traits[key] = device['traits']
        if device.get('taken'):
            taken[key] = device['taken']
    return statuses, traits, taken


def _why(exc):
    """A short reason for a failed report: the error's name, or what the
    conductor said."""
    if isinstance(exc, exception.CyborgException):
        # NOTE(agent): str() of an error rebuilt from a conductor's answer
        # holds the conductor's traceback; the message is enough here.
        return exc.message
    return type(exc).__name__
