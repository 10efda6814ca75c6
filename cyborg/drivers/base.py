"""The contract every accelerator driver implements."""

import abc
import dataclasses
import functools

from oslo_config import cfg

from cyborg import exception
from cyborg.drivers import mdev
from cyborg.drivers import report
from cyborg.drivers import sysfs as sysfs_mod

CONF = cfg.CONF


#: Partition mode names (``report.Device.modes``): the whole device as one
#: passthrough deployable; vGPUs of one type on the PF, time-sliced; vGPUs
#: of one type on the SR-IOV VFs, one per VF.
MODE_PASSTHROUGH = 'passthrough'
MODE_VGPU = 'vgpu:'
MODE_SRIOV_VGPU = 'sriov-vgpu:'


class DiscoveryContext:
    """What one discovery pass gives drivers: the host and one sysfs scan.

    The PCI tree is read once per pass and shared by every driver.
    ``modes`` is what the operator chose for devices that have partition
    modes: ``{driver name: {PCI address of the device: mode}}``.
    """

    def __init__(self, host, sysfs_root=None, modes=None):
        self.host = host
        self._sysfs_root = sysfs_root
        self.modes = modes or {}

    @functools.cached_property
    def sysfs(self):
        return sysfs_mod.Sysfs(self._sysfs_root)

    def chosen_mode(self, driver_name, address):
        """The mode chosen for the device at ``address`` (text or
        ``sysfs.PciAddress``) of driver ``driver_name``; None when none
        was, and the driver arranges the device as its options say."""
        return (self.modes.get(driver_name) or {}).get(str(address))


#: Health states, best to worst but for ``UNKNOWN``, which only a check
#: that could read nothing at all gives.
OK = 'ok'
DEGRADED = 'degraded'
FAILED = 'failed'
UNKNOWN = 'unknown'
STATES = (OK, DEGRADED, FAILED, UNKNOWN)
#: The names ``Health.sources`` may hold: the checks that ran.
SOURCES = ('pci', 'aer', 'link', 'hwmon', 'qat', 'dfl', 'nvml')


@dataclasses.dataclass(frozen=True)
class Health:
    """What a driver says of a device's health.

    ``state`` is one of ``STATES``; ``reason`` says what was found (None
    when nothing was); ``sources`` names the checks that ran.
    """

    state: str = OK
    reason: str | None = None
    sources: tuple = ()

    def __post_init__(self):
        # NOTE(health): drivers and tests written before states existed
        # build Health(ok_flag, reason); a bool still means ok or failed.
        if isinstance(self.state, bool):
            object.__setattr__(self, 'state', OK if self.state else FAILED)
        if self.state not in STATES:
            raise ValueError('not a health state: %r' % (self.state,))
        object.__setattr__(self, 'sources', tuple(self.sources))

    @property
    def ok(self) -> bool:
        """Whether the device may be used: anything but ``FAILED``."""
        return self.state != FAILED


HEALTHY = Health()


class AcceleratorDriver(abc.ABC):
    """A driver finds one kind of accelerator and reports it as plain data.

    Drivers are loaded by name from the ``cyborg.accelerator.driver`` entry
    point namespace, built with no arguments, and read their own options from
    ``cyborg.conf``. They return ``cyborg.drivers.report`` objects and never
    talk to the database, RPC or Placement. Only ``discover`` is required;
    the other operations have safe defaults.
    """

    #: Name recorded as the devices' and deployables' driver_name.
    name = None

    #: Version shown in the driver list; bump it with the driver's code.
    version = '1.0'

    #: Files whose content ``discover`` depends on and that the kernel
    #: changes in place (no entry comes or goes): glob patterns relative
    #: to a PCI function's directory. The agent's discovery cache reads
    #: them, and compares the paths they expand to, on every pass, and
    #: runs discovery again when one changed. Add yours to these.
    watched_files = ('mdev_supported_types/*/available_instances',)

    #: The option group whose ``scrub_on_release`` turns ``scrub`` on for
    #: this driver; None: the driver is never asked to scrub.
    scrub_group = None

    @abc.abstractmethod
    def discover(self, ctx):
        """Return the ``report.Device`` list this driver finds on the host.

        :param ctx: a ``DiscoveryContext`` (host name, shared sysfs scan).
            Deployable names must be unique across hosts: build them from
            ``ctx.host`` and the device's PCI address. A device without a
            deployable says why in its ``offer_reason``.
        """

    def install(self, device):
        """Prepare a device for use (bind a host driver, create VFs...).

        Called when an operator activates the device. The default has
        nothing to prepare. Raise ``exception.DriverError`` with the reason
        when the device cannot be made ready.
        """
        return None

    def uninstall(self, device):
        """Undo ``install`` before the device is released; default: none."""
        return None

    def program(self, device, deployable, image_path):
        """Load a bitstream or firmware image onto a deployable.

        :param device: the ``report.Device`` that holds the deployable.
        :param deployable: the ``report.Deployable`` to program.
        :param image_path: a local file with the image to load.
        """
        raise exception.DriverOperationNotSupported(driver=self.name,
                                                    operation='program')

    def prepare_handle(self, attach_type, attach_info, handle_uuid):
        """Make an attach handle ready for an instance, at bind.

        The default creates the mediated device of an ``MDEV`` handle,
        named ``handle_uuid``; other handles need nothing.
        """
        if attach_type == mdev.ATTACH_MDEV:
            mdev.create(self.name, attach_info, handle_uuid)

    def release_handle(self, attach_type, attach_info, handle_uuid):
        """Undo ``prepare_handle`` once the handle is unbound."""
        if attach_type == mdev.ATTACH_MDEV:
            mdev.remove(self.name, attach_info, handle_uuid)

    def scrub_on_release(self) -> bool:
        """Whether the agent scrubs this driver's deployables between
        tenants: ``[<scrub_group>] scrub_on_release``, read at each call
        so a reloaded configuration counts."""
        if self.scrub_group is None:
            return False
        return bool(CONF[self.scrub_group].scrub_on_release)

    def scrub(self, device: report.Device,
              deployable: report.Deployable) -> bool:
        """Make a deployable clean for its next tenant.

        Called when the last accelerator request on ``deployable``
        unbinds, after ``release_handle`` of each of its handles, while
        its capacity is reserved in Placement; only when
        ``scrub_on_release`` holds. It must leave alone anything another
        request still uses (a mediated device of another deployable on
        the same parent), and be safe to run again.

        :param device: the ``report.Device`` that holds the deployable.
        :param deployable: the ``report.Deployable`` to scrub.
        :returns: True when something was done (a reset, an image
            loaded), False when there was nothing to scrub.
        :raises exception.DriverError: the deployable could not be made
            clean (its function is gone, a reset failed); the device then
            becomes failed. Default: nothing to scrub.
        """
        return False

    def in_use(self, device) -> list[str]:
        """What of ``device`` the host hands out now outside Placement's
        view (mediated devices that exist): a partition mode switch is
        refused while anything is. Default: nothing.
        """
        return []

    def install_driver(self):
        """Prepare the host for this driver (load a kernel module...).

        Called once when an operator installs the driver on a running
        agent, before its first discovery. Raise ``exception.DriverError``
        with the reason when the host cannot run it; the agent then leaves
        the driver disabled and the host as it was. Default: nothing.
        """
        return None

    def uninstall_driver(self):
        """Undo ``install_driver`` when an operator uninstalls the driver.
        """
        return None

    def update(self, devices, image_path=None):
        """Apply new configuration or firmware to this driver's devices.

        The agent builds a fresh driver instance (so options are read
        again) and calls this on it. With ``image_path`` the default loads
        the image onto every deployable through ``program``.

        :param devices: the ``report.Device`` list this driver found.
        """
        if image_path is None:
            return
        for device in devices:
            for deployable in device.deployables:
                self.program(device, deployable, image_path)

    def attach_host(self, device, deployable):
        """Give a deployable to the host itself (not to an instance).

        For example bind its PCI function to the host's kernel driver.
        """
        raise exception.DriverOperationNotSupported(driver=self.name,
                                                    operation='attach_host')

    def detach_host(self, device, deployable):
        """Take a deployable back from the host, ready for instances."""
        raise exception.DriverOperationNotSupported(driver=self.name,
                                                    operation='detach_host')

    def health(self, device) -> Health:
        """Return a ``Health``; a ``FAILED`` device becomes 'error'.

        Runs on every report for every device: keep it to a few reads.
        Default: healthy, with no check run.
        """
        return HEALTHY

    def metrics(self, device) -> dict[str, float]:
        """The latest sample of ``device``: series name -> value.

        Names are those of ``cyborg.drivers.telemetry.SERIES``; only the
        series that could be read are present. Default: none.
        """
        return {}
