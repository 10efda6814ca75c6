"""Drivers an operator installs, uninstalls or updates on a running agent."""

import os

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.agent import cache as report_cache
from cyborg.agent import resource_tracker

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class DriverChoices:
    """Which drivers the operator added to, or took from, the configured
    ``[agent] enabled_drivers``; kept on disk so a restart keeps them.

    Only the difference from the configuration is recorded: a driver the
    configuration later lists is simply enabled, and one it drops stays
    off unless the operator installed it.
    """

    def __init__(self, host):
        self.path = os.path.join(CONF.state_path,
                                 'agent-%s-drivers.json' % host)
        data = report_cache.read_json(self.path, 'driver choices') or {}
        self.installed = [n for n in data.get('installed') or ()
                          if isinstance(n, str)]
        self.uninstalled = [n for n in data.get('uninstalled') or ()
                            if isinstance(n, str)]

    def names(self):
        """The drivers to load: the configured ones, amended."""
        names = [n for n in CONF.agent.enabled_drivers
                 if n not in self.uninstalled]
        return names + [n for n in self.installed if n not in names]

    def record(self, name, enabled):
        for names in (self.installed, self.uninstalled):
            if name in names:
                names.remove(name)
        configured = name in CONF.agent.enabled_drivers
        if enabled and not configured:
            self.installed.append(name)
        elif not enabled and configured:
            self.uninstalled.append(name)
        report_cache.write_json(self.path, {
            'installed': sorted(self.installed),
            'uninstalled': sorted(self.uninstalled)})


def details(tracker):
    """What the conductor records of this host's drivers."""
    return {'drivers': sorted(tracker.drivers),
            'available_drivers': resource_tracker.driver_catalogue(),
            'scrubbing_drivers': scrubbing_drivers(tracker)}


def scrubbing_drivers(tracker: resource_tracker.ResourceTracker
                      ) -> list[str]:
    """The names (as devices record them, ``driver.name``) of the enabled
    drivers whose ``scrub_on_release`` is on, sorted."""
    return sorted({driver.name or entry_point
                   for entry_point, driver in tracker.drivers.items()
                   if scrubs(driver)})


def scrubs(driver) -> bool:
    """Whether ``driver`` scrubs between tenants; False, with a warning,
    when its ``scrub_group`` has no ``scrub_on_release`` option."""
    try:
        return driver.scrub_on_release()
    except cfg.Error as exc:
        # NOTE(scrub): a driver's mistake must not stop the reports.
        LOG.warning('Driver %s does not say whether it scrubs (%s); it '
                    'does not', driver.name, exc)
        return False


def _entry_point(host, name):
    """The entry point of an installed driver named either way."""
    catalogue = resource_tracker.driver_catalogue()
    for entry in catalogue:
        if name in (entry['name'], entry['driver_name']):
            return entry['name']
    raise exception.DriverNotAvailable(
        name=name, host=host,
        available=', '.join(entry['name'] for entry in catalogue))


def _build(host, entry_point):
    try:
        return resource_tracker.load_drivers([entry_point])[entry_point]
    except exception.CyborgException as exc:
        raise exception.DriverInstallFailed(name=entry_point, host=host,
                                            reason=str(exc)) from exc


def install(tracker, choices, host, name):
    """Build a driver, run its install step and start discovering with it.

    :raises DriverNotAvailable, DriverAlreadyEnabled, DriverInstallFailed:
        the host keeps the drivers it had.
    """
    entry_point = _entry_point(host, name)
    if tracker.entry_point_of(entry_point) is not None:
        raise exception.DriverAlreadyEnabled(name=entry_point, host=host)
    driver = _build(host, entry_point)
    try:
        driver.install_driver()
    except Exception as exc:  # noqa: BLE001 - reported to the operator
        LOG.warning('Install step of driver %s failed: %s', entry_point, exc)
        raise exception.DriverInstallFailed(name=entry_point, host=host,
                                            reason=str(exc)) from exc
    tracker.enable(entry_point, driver)
    choices.record(entry_point, True)
    LOG.info('Driver %s installed and enabled', entry_point)
    return entry_point


def uninstall(tracker, choices, host, name):
    """Stop using a driver and run its uninstall step.

    :raises DriverNotEnabled: nothing changes.
    """
    entry_point = tracker.entry_point_of(name)
    if entry_point is None:
        raise exception.DriverNotEnabled(name=name, host=host)
    driver = tracker.disable(entry_point)
    choices.record(entry_point, False)
    try:
        driver.uninstall_driver()
    except Exception:  # noqa: BLE001 - the driver is off either way
        LOG.exception('Uninstall step of driver %s failed; it is disabled '
                      'all the same', entry_point)
    LOG.info('Driver %s uninstalled', entry_point)
    return entry_point


def update(tracker, host, name, devices, image_path=None):
    """Rebuild a driver with the options as they are now, then let it
    apply them (and an image, when given) to its devices.

    :param devices: the ``report.Device`` list the driver last found.
    :raises DriverNotEnabled, DriverError: the old driver stays in use.
    """
    entry_point = tracker.entry_point_of(name)
    if entry_point is None:
        raise exception.DriverNotEnabled(name=name, host=host)
    try:
        CONF.reload_config_files()
    except cfg.Error as exc:
        raise exception.DriverError(driver=entry_point,
                                    reason='configuration: %s' % exc
                                    ) from exc
    try:
        driver = resource_tracker.load_drivers([entry_point])[entry_point]
    except exception.CyborgException as exc:
        raise exception.DriverError(driver=entry_point,
                                    reason=str(exc)) from exc
    mine = [device for device in devices
            if device.driver_name in (driver.name, entry_point)]
    try:
        driver.update(mine, image_path)
    except exception.CyborgException:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the operator
        LOG.exception('Update of driver %s failed', entry_point)
        raise exception.DriverError(driver=entry_point,
                                    reason=str(exc)) from exc
    finally:
        # NOTE(discovery_cache): new firmware may show in values sysfs
        # does not flag as changed; even a failed update reads again.
        tracker.invalidate()
    tracker.enable(entry_point, driver)
    LOG.info('Driver %s updated%s', entry_point,
             ' with a new image' if image_path else '')
    return entry_point
