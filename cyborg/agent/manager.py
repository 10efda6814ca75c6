"""Agent RPC endpoints and the periodic discovery and report."""

import contextlib
import os
import threading

from oslo_concurrency import lockutils
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import exception
from cyborg.agent import cache as report_cache
from cyborg.agent import driver_ops
from cyborg.agent import metrics
from cyborg.agent import modes as agent_modes
from cyborg.agent import placement as agent_placement
from cyborg.agent import reporting
from cyborg.agent import resource_tracker
from cyborg.clients import glance
from cyborg.clients import placement as placement_client
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.drivers.report import DeviceKey

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'


class AgentManager(reporting.Reporter, agent_modes.ModeSwitcher):
    """Endpoints of ``cyborg.conductor.agent_rpcapi.AgentAPI``, and the
    report loop."""

    target = messaging.Target(version='1.9')

    def __init__(self, host, tracker=None, placement=None):
        self.host = host
        self.driver_choices = driver_ops.DriverChoices(host)
        #: The partition modes chosen for this host's devices.
        self.modes = agent_modes.ModeStore(os.path.join(
            CONF.state_path, agent_modes.state_file(host)))
        # NOTE(agent): drivers load here, before the service binds anything,
        # so an unknown driver name stops the process at once.
        self.tracker = tracker or resource_tracker.ResourceTracker(
            host, self.driver_choices.names())
        self.tracker.modes = self.modes
        self.cache = report_cache.ReportCache(os.path.join(
            CONF.state_path, 'agent-%s-inventory.json' % host))
        self.handles = report_cache.HandleCache(os.path.join(
            CONF.state_path, 'agent-%s-handles.json' % host))
        self._lock = threading.Lock()
        self._backoff = 0
        self._found = {}
        self._current = None
        self.last_result = None
        #: Install steps run since the last report: ``{device uuid: None
        #: or why it failed}``, sent with the next one.
        self.installed = {}
        self.conductor = None
        self.placement = placement or self._provider_tree(host)
        self._placement_backoff = 0
        # NOTE(agent): the first pass heals: Placement may have changed
        # while this agent was down.
        self._heal_due = 0.0
        self.telemetry = metrics.Sampler(self)

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
        tasks = [(CONF.agent.report_interval, self.report)]
        if CONF.agent.metrics_listen:
            tasks.append((CONF.agent.report_interval,
                          self.telemetry.refresh_uuids))
        return tasks

    # --- RPC endpoints -----------------------------------------------------

    def update_device_states(self, context, devices):
        """RPC: the conductor changed device statuses; reserve or free them.

        :param devices: ``[{'controlpath': [type, info], 'status': ...}]``
        :returns: whether Placement now holds them; None when this agent
            does not use Placement.
        """
        self.telemetry.learn(devices)
        if self.placement is None:
            return None
        with self._lock:
            self.placement.set_statuses(
                *reporting.recorded({'devices': devices}))
            delay = self._sync_placement(
                context, self.cache.devices if self._current is None
                else self._current)
        return delay is None

    def discover(self, context):
        """RPC: run a discovery pass now and return the conductor's record.
        """
        self.report()
        return self.last_result

    @messaging.expected_exceptions(exception.CyborgException)
    def device_metrics(self, context, device_key):
        """RPC (1.7): the latest telemetry sample of one device of this
        host: ``metrics``, ``health``, ``health_reason``,
        ``health_sources`` and ``sampled_at`` (ISO 8601, UTC).

        :raises DeviceMetricsUnavailable: the last discovery did not find
            the device.
        """
        return self.telemetry.sample(device_key).to_primitive()

    def _device(self, driver_name, cpid_type, cpid_info):
        key = DeviceKey.parse([cpid_type, cpid_info]).text()
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
                _downloaded(context, image_id) as path:
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

    @messaging.expected_exceptions(exception.CyborgException)
    def scrub_deployable(self, context, driver_name: str, cpid_type: str,
                         cpid_info: str, deployable_name: str) -> dict:
        """RPC (1.8): clean a deployable whose last ARQ unbound, with its
        driver's ``scrub``, unless its ``scrub_on_release`` is off.

        :returns: ``{'scrubbed': bool}``.
        :raises DriverError: the device or deployable is gone, or the
            scrub failed.
        """
        driver = self.tracker.driver_named(driver_name)
        if not driver_ops.scrubs(driver):
            return {'scrubbed': False}
        device, dep = self._deployable(driver_name, cpid_type, cpid_info,
                                       deployable_name)
        # NOTE(agent): the programming lock: a scrub that loads an image
        # must not overlap another programming of the device.
        with lockutils.lock('program-%s-%s' % (cpid_type, cpid_info)):
            done = bool(self._run(driver_name, 'Scrubbing %s' %
                                  deployable_name, driver.scrub, device,
                                  dep))
        LOG.info('Deployable %s %s', deployable_name,
                 'scrubbed' if done else 'had nothing to scrub')
        return {'scrubbed': done}

    @messaging.expected_exceptions(exception.CyborgException)
    def set_device_mode(self, context, driver_name: str, address: str,
                        mode: str) -> dict:
        """RPC (1.9): put a device of this host in a partition mode.

        Refused while the device holds a mediated device. The mode is
        kept, the device discovered again and its providers rearranged in
        Placement in one reshape; then a report pass brings the conductor
        up to date before this returns. All under the report lock.

        :param address: the PCI address of the device's control path.
        :returns: ``{'mode', 'modes', 'changed', 'deployables'}``: the
            device's mode and modes now, whether anything changed, the
            names of its deployables.
        :raises DeviceModeNotOffered: no device of the driver there, or
            it does not offer ``mode``.
        :raises DeviceHoldsVgpus: it holds vGPUs (``mdevs`` names them).
        :raises DeviceModeSwitchFailed: Placement refused; the device
            keeps its mode.
        :raises DriverError: the driver is not enabled, or failed.
        """
        return self._switch_mode(driver_name, address, mode)

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
        key = DeviceKey.parse([cpid_type, cpid_info]).text()
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
        key = DeviceKey.parse([cpid_type, cpid_info]).text()
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
        with _downloaded(context, image_id) as path, self._lock:
            driver_ops.update(self.tracker, self.host, name,
                              list(self._found.values()), path)
        return self._rediscover()


@contextlib.contextmanager
def _downloaded(context, image_id):
    """A Glance image in a local file for the duration (None: no image);
    its signature verified first when [glance] verify_image_signatures."""
    if image_id is None:
        yield None
        return
    path = glance.GlanceClient().download(image_id, CONF.state_path,
                                         context=context)
    try:
        yield path
    finally:
        os.unlink(path)

