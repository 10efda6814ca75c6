"""Loads the enabled drivers and turns their discoveries into one report."""

from oslo_config import cfg
from oslo_log import log as logging
from stevedore import extension
from stevedore import named

from cyborg import drivers
from cyborg import exception
from cyborg.drivers import base
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

    def __init__(self, host, driver_names=None):
        self.host = host
        names = (CONF.agent.enabled_drivers if driver_names is None
                 else driver_names)
        self.drivers = load_drivers(names)

    def enable(self, entry_point, driver):
        """Add a driver built and installed at run time."""
        self.drivers[entry_point] = driver

    def disable(self, entry_point):
        """Stop discovering with a driver; returns it."""
        return self.drivers.pop(entry_point)

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

        :returns: ``(HostReport, failed)`` where ``failed`` names the drivers
            whose discovery raised; their devices are absent from the report
            and the conductor must keep what it knows of them.
        """
        ctx = base.DiscoveryContext(self.host)
        host_report = report.HostReport(host=self.host)
        failed = []
        for name, driver in self.drivers.items():
            try:
                found = driver.discover(ctx)
            except Exception:  # noqa: BLE001 - one driver must not stop all
                LOG.exception('Driver %s failed to discover devices', name)
                failed.append(driver.name or name)
                continue
            for device in found:
                device.fault = self._fault(driver, device)
            host_report.devices.extend(found)
        return host_report, failed

    @staticmethod
    def _fault(driver, device):
        try:
            health = driver.health(device)
        except Exception as exc:  # noqa: BLE001 - a failing check is a fault
            LOG.warning('Health check of %s by %s failed: %s',
                        device.controlpath.cpid_info, driver.name, exc)
            return 'health check failed: %s' % exc
        return None if health.ok else (health.reason or 'unhealthy')
