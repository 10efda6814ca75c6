"""Loads the enabled drivers and turns their discoveries into one report."""

from oslo_config import cfg
from oslo_log import log as logging
from stevedore import extension
from stevedore import named

from cyborg import drivers
from cyborg import exception
from cyborg.agent import discovery_cache
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import report

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def available_drivers():
    """Names of every driver installed in the entry point namespace."""
    return sorted(extension.ExtensionManager(drivers.NAMESPACE).names())


def driver_catalogue():
    """``[{'name', 'driver_name', 'version'}]`` of every installed driver,
    read from the classes: nothing is built, so a driver whose options do
    not suit this host is still listed."""
    found = []
    manager = extension.ExtensionManager(drivers.NAMESPACE,
                                         on_load_failure_callback=_skip)
    for ext in sorted(manager.extensions, key=lambda ext: ext.name):
        found.append({'name': ext.name,
                      'driver_name': getattr(ext.plugin, 'name', None) or
                      ext.name,
                      'version': str(getattr(ext.plugin, 'version', ''))})
    return found


def _skip(_manager, entrypoint, exc):
    LOG.warning('Driver %s cannot be imported: %s', entrypoint.name, exc)


def load_drivers(names):
    """Build each named driver; an unknown or broken one stops the agent."""

    def missing(missing_names):
        raise exception.DriverNotFound(
            name=sorted(missing_names)[0],
            available=', '.join(available_drivers()) or 'none')

    def failed(_manager, entrypoint, exc):
        raise exception.ConfigError(
            option='[agent] enabled_drivers',
            reason='driver %r could not be loaded: %s' % (entrypoint.name,
                                                          exc))

    if not names:
        return {}
    manager = named.NamedExtensionManager(
        drivers.NAMESPACE, names=list(names), invoke_on_load=True,
        name_order=True, on_missing_entrypoints_callback=missing,
        on_load_failure_callback=failed)
    return {ext.name: ext.obj for ext in manager.extensions}


class ResourceTracker:
    """Runs discovery on every enabled driver of this host."""

    def __init__(self, host, driver_names=None, modes=None):
        self.host = host
        #: Where the chosen partition modes are kept (a
        #: ``modes.ModeStore``); None: none are.
        self.modes = modes
        names = (CONF.agent.enabled_drivers if driver_names is None
                 else driver_names)
        self.drivers = load_drivers(names)
        self.cache = discovery_cache.DiscoveryCache()
        #: Whether the last pass was answered by the discovery cache.
        self.last_pass_cached = False

    def enable(self, entry_point, driver):
        """Add a driver built and installed at run time."""
        self.drivers[entry_point] = driver
        self.cache.invalidate()

    def disable(self, entry_point):
        """Stop discovering with a driver; returns it."""
        self.cache.invalidate()
        return self.drivers.pop(entry_point)

    def invalidate(self):
        """Have the next pass run every driver: the host was changed."""
        self.cache.invalidate()

    def entry_point_of(self, name):
        """The entry point name of an enabled driver named either way."""
        for entry_point, driver in self.drivers.items():
            if name in (driver.name, entry_point):
                return entry_point
        return None

    def driver_named(self, name):
        """The loaded driver whose ``name`` (or entry point) is ``name``."""
        for entry_point, driver in self.drivers.items():
            if name in (driver.name, entry_point):
                return driver
        raise exception.DriverError(driver=name,
                                    reason='driver not enabled on this host')

    def discover(self):
        """One discovery pass over all drivers, sharing one sysfs scan.

        While the host, the drivers and the options are unchanged the
        devices of the last full pass are reported again (see
        ``discovery_cache``); every device's health is checked either way.

        :returns: ``(HostReport, failed)`` where ``failed`` names the drivers
            whose discovery raised; their devices are absent from the report
            and the conductor must keep what it knows of them.
        """
        chosen = self.modes.mapping() if self.modes is not None else {}
        key = (discovery_cache.Key.of(self.drivers, modes=chosen)
               if self.cache.enabled() else None)
        found = self.cache.lookup(key)
        self.last_pass_cached = found is not None
        failed = []
        if found is None:
            found, failed = self._run_drivers(chosen)
            self.cache.store(None if failed else key, found)
        host_report = report.HostReport(host=self.host)
        for driver, devices in found:
            for device in devices:
                host_report.devices.append(
                    _copy(device, self._health(driver, device)))
        return host_report, failed

    def _run_drivers(self, modes=None):
        ctx = base.DiscoveryContext(self.host, modes=modes)
        found, failed = [], []
        for name, driver in self.drivers.items():
            try:
                found.append((driver, list(driver.discover(ctx))))
            except Exception:  # noqa: BLE001 - one driver must not stop all
                LOG.exception('Driver %s failed to discover devices', name)
                failed.append(driver.name or name)
        return found, failed

    @staticmethod
    def _health(driver, device):
        """The report fields of the driver's Health of ``device``.

        ``fault`` keeps the meaning conductors older than health states
        read: the reason of a failed device, else None.
        """
        try:
            found = driver.health(device)
        except Exception as exc:  # noqa: BLE001 - no verdict on the device
            # NOTE(health): a check that breaks (a bug, a library of
            # another shape) says nothing of the hardware: failing the
            # device for it would drain healthy GPUs off a whole cloud.
            LOG.warning('Health check of %s by %s errored: %s: %s',
                        device.controlpath.cpid_info, driver.name,
                        type(exc).__name__, exc)
            found = base.Health(base.UNKNOWN, 'health check errored: %s: %s'
                                % (type(exc).__name__, exc))
        # NOTE(health): drivers that build Health themselves may say more
        # than the conductor's column holds.
        reason = health.one_line(found.reason)
        if found.state == base.FAILED and not reason:
            reason = 'unhealthy'
        return {'fault': reason if found.state == base.FAILED else None,
                'health': found.state, 'health_reason': reason,
                'health_sources': list(found.sources)}


def _copy(device, health_fields):
    """``device`` with its health fields, sharing nothing mutable with it.

    NOTE(discovery_cache): the cached devices are handed out again on the
    next passes; what a caller changes of one pass's report must not show
    in the next one.
    """
    return _clone(
        device, **health_fields,
        std_board_info=dict(device.std_board_info),
        vendor_board_info=dict(device.vendor_board_info),
        services=list(device.services), warnings=list(device.warnings),
        modes=list(device.modes),
        deployables=[_clone(
            dep, traits=list(dep.traits), attach_handles=[
                _clone(handle, attach_info=dict(handle.attach_info))
                for handle in dep.attach_handles])
            for dep in device.deployables])


def _clone(obj, **changes):
    # NOTE(discovery_cache): the report dataclasses are plain attribute
    # holders; this costs a fifth of dataclasses.replace, which matters a
    # few hundred times a pass.
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new
