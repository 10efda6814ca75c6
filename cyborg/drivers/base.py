"""The contract every accelerator driver implements."""

import abc
import dataclasses
import functools

from cyborg import exception
from cyborg.drivers import mdev
from cyborg.drivers import sysfs as sysfs_mod


class DiscoveryContext:
    """What one discovery pass gives drivers: the host and one sysfs scan.

    The PCI tree is read once per pass and shared by every driver.
    """

    def __init__(self, host, sysfs_root=None):
        self.host = host
        self._sysfs_root = sysfs_root

    @functools.cached_property
    def sysfs(self):
        return sysfs_mod.Sysfs(self._sysfs_root)


@dataclasses.dataclass(frozen=True)
class Health:
    """What a driver says of a device's health."""

    ok: bool = True
    reason: str | None = None


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

    @abc.abstractmethod
    def discover(self, ctx):
        """Return the ``report.Device`` list this driver finds on the host.

        :param ctx: a ``DiscoveryContext`` (host name, shared sysfs scan).
            Deployable names must be unique across hosts: build them from
            ``ctx.host`` and the device's PCI address.
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

    def health(self, device):
        """Return a ``Health``; a device found unhealthy becomes 'error'."""
        return HEALTHY

    def stats(self, device):
        """Usage figures of a device (a flat dict); default: none."""
        return {}
