"""Partition modes chosen for this host's devices, and switching them.

A device whose driver reports ``modes`` (an NVIDIA GPU: whole, or vGPUs of
one type) is arranged as its driver's options say until an operator
chooses a mode for it; the choice is kept in a file beside the agent's
other state and given to the drivers at every discovery.
"""

import dataclasses
import json
import threading

from oslo_log import log as logging

from cyborg import exception
from cyborg.agent import cache as report_cache
from cyborg.agent import reshape
from cyborg.drivers import sysfs

LOG = logging.getLogger(__name__)


def state_file(host):
    """The name of the modes file of ``host``'s agent in state_path."""
    return 'agent-%s-modes.json' % host


def address_text(address):
    """A device's PCI address as the modes file writes it, from its text
    (any case), its control path info (a dict) or that info's JSON.

    :raises ValueError: it is no PCI address.
    """
    if isinstance(address, str) and address.lstrip().startswith('{'):
        address = json.loads(address)
    try:
        if isinstance(address, dict):
            address = '%(domain)s:%(bus)s:%(device)s.%(function)s' % address
        return str(sysfs.PciAddress.parse(address))
    except (sysfs.MalformedEntry, AttributeError, TypeError,
            KeyError) as exc:
        raise ValueError('not a PCI address: %r' % (address,)) from exc


class ModeStore:
    """``{driver name: {PCI address: mode}}``, kept in a JSON file.

    The file is ``{"modes": {...}}``; one that cannot be read counts as
    no choice at all (the drivers' options then arrange every device).
    """

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        data = report_cache.read_json(path, 'partition modes') or {}
        modes = data.get('modes')
        self._modes = {}
        if isinstance(modes, dict):
            for driver, chosen in modes.items():
                if isinstance(chosen, dict):
                    self._modes[driver] = {
                        address: mode for address, mode in chosen.items()
                        if isinstance(mode, str)}

    def mapping(self):
        """A copy of every choice: ``{driver: {address: mode}}``."""
        with self._lock:
            return {driver: dict(chosen)
                    for driver, chosen in self._modes.items() if chosen}

    def get(self, driver, address):
        """The mode chosen for a device; None when none was."""
        with self._lock:
            return (self._modes.get(driver) or {}).get(address)

    def set(self, driver, address, mode):
        """Choose ``mode`` (None: forget the choice); returns the one
        before. The file is written before this returns."""
        with self._lock:
            chosen = self._modes.setdefault(driver, {})
            before = chosen.get(address)
            if mode is None:
                chosen.pop(address, None)
            else:
                chosen[address] = mode
            if not chosen:
                del self._modes[driver]
            report_cache.write_json(self.path, {'modes': self._modes})
            return before


class ModeSwitcher:
    """The mode half of ``AgentManager``: ``set_device_mode``'s work.

    It uses the manager's ``tracker``, ``modes``, ``placement``,
    ``_found``, ``_lock`` and its report pass.
    """

    def _switch_mode(self, driver_name, address, mode):
        """Put one device in ``mode``; see ``AgentManager.set_device_mode``.
        """
        driver = self.tracker.driver_named(driver_name)
        try:
            address = address_text(address)
        except ValueError:
            raise exception.DeviceModeNotOffered(
                uuid=address, mode=mode, modes='none') from None
        with self._lock:
            device = self._device_at(driver.name, address, refresh=False)
            if mode not in device.modes:
                raise exception.DeviceModeNotOffered(
                    uuid=address, mode=mode,
                    modes=', '.join(device.modes) or 'none')
            if device.mode == mode:
                LOG.info('Device %s of %s is in mode %s already', address,
                         driver.name, mode)
                return self._mode_answer(device, False)
            held = self._run(driver.name, 'Reading what uses %s' % address,
                             driver.in_use, device)
            if held:
                raise exception.DeviceHoldsVgpus(uuid=address,
                                                 mdevs=', '.join(held))
            before = self.modes.set(driver.name, address, mode)
            try:
                device = self._device_at(driver.name, address, refresh=True)
                if self.placement is not None:
                    done = reshape.rearrange(self.placement, device.key.text(),
                                             _primitive(device))
                    LOG.info('Placement now holds %s for %s (was %s)',
                             ', '.join(done.created) or 'no new provider',
                             address, ', '.join(done.deleted) or 'nothing')
            except Exception as exc:  # noqa: BLE001 - undone, then raised
                self.modes.set(driver.name, address, before)
                self.tracker.invalidate()
                LOG.warning('Device %s of %s stays in its mode: %s', address,
                            driver.name, exc)
                raise exception.DeviceModeSwitchFailed(
                    uuid=address, mode=mode,
                    reason=getattr(exc, 'message', str(exc))) from exc
            LOG.info('Device %s of %s is now in mode %s', address,
                     driver.name, mode)
            # NOTE(agent): the conductor records the new deployables
            # before the caller hears of them; under the same lock, so no
            # periodic pass writes the arrangement in between.
            passed = self._report_locked()
        self._after_report(*passed)
        found = self._found.get(device.key.text(), device)
        return self._mode_answer(found, True)

    def _device_at(self, driver_name, address, refresh):
        """The device of ``driver_name`` at ``address`` in the latest
        discovery, or in a new one (``refresh``, or when it is not in the
        latest).

        :raises DeviceModeNotOffered: no such device on this host.
        :raises DriverError: the driver's discovery failed.
        """
        if not refresh:
            found = _at(self._found.values(), driver_name, address)
            if found is not None:
                return found
        self.tracker.invalidate()
        host_report, failed = self.tracker.discover()
        if driver_name in failed:
            raise exception.DriverError(driver=driver_name,
                                        reason='its discovery failed')
        found = _at(host_report.devices, driver_name, address)
        if found is None:
            raise exception.DeviceModeNotOffered(
                uuid=address, mode='any', modes='none: %s has no device '
                'there' % driver_name)
        return found

    @staticmethod
    def _mode_answer(device, changed):
        return {'mode': device.mode, 'modes': list(device.modes),
                'changed': changed,
                'deployables': sorted(dep.name for dep in device.deployables)}


def _at(devices, driver_name, address):
    for device in devices:
        if device.driver_name != driver_name or \
                device.controlpath.cpid_type != 'PCI':
            continue
        try:
            if address_text(device.controlpath.cpid_info) == address:
                return device
        except ValueError:
            continue
    return None


def _primitive(device):
    """The primitive of one ``report.Device``, as reports carry it."""
    return dataclasses.asdict(device)
