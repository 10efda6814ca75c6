"""Generic driver: any PCI accelerator, described per backend in config."""

import dataclasses
import functools
import os
import re

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg import states
from cyborg.conf import generic as generic_conf
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs as sysfs_mod
from cyborg.drivers import telemetry
from cyborg.drivers import tools

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BACKENDS_OPTION = '[generic_driver] backends'
#: Seconds modprobe may take to load a backend's kernel module.
MODPROBE_TIMEOUT = 60

_BACKEND_NAME = re.compile(r'^[A-Za-z0-9_]{1,64}$')
# NOTE(generic): kernel driver and module names go into sysfs files and
# onto modprobe's command line; a leading '-' would read as an option.
_KERNEL_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')
_SERVICE = re.compile(r'^\S{1,255}$')
# NOTE(generic): a PCI function is never a mediated device; that type is
# the NVIDIA driver's, for vGPUs.
_DEVICE_TYPES = tuple(kind for kind in states.DEVICE_TYPES if kind != 'MDEV')


@dataclasses.dataclass(frozen=True)
class Backend:
    """One ``[generic_backend_<name>]`` group, checked."""

    name: str
    device_type: str | None
    vendor_id: str | None
    product_ids: frozenset
    addresses: frozenset
    resource_class: str
    traits: tuple
    services: tuple
    host_driver: str | None
    kernel_module: str | None

    def matches(self, fn):
        """Whether the ``sysfs.PciFunction`` is one this backend selects."""
        return (self.vendor_id in (None, fn.vendor_id)
                and (not self.product_ids or fn.device_id in self.product_ids)
                and (not self.addresses or fn.address in self.addresses))


# --- Option checks: each raises ValueError, which pci.checked names. --------

def _backend_names(values):
    for value in values:
        if not _BACKEND_NAME.match(value):
            raise ValueError('backend name %r: use 1 to 64 letters, digits '
                             'and underscores' % value)
    duplicates = sorted({v for v in values if values.count(v) > 1})
    if duplicates:
        raise ValueError('backend %s is listed twice' % duplicates[0])
    return list(values)


def _device_type(value):
    if value is None:
        return None
    kind = value.strip().upper()
    if kind not in _DEVICE_TYPES:
        raise ValueError('%r is not one of %s'
                         % (value, ', '.join(_DEVICE_TYPES)))
    return kind


def _optional(parse):
    return lambda value: None if value is None else parse(value)


def _each(parse):
    return lambda values: [parse(value) for value in values]


def _kernel_name(value):
    if not _KERNEL_NAME.match(value):
        raise ValueError('%r is not a kernel driver or module name' % value)
    return value


def _services(values):
    for value in values:
        if not _SERVICE.match(value):
            raise ValueError('service %r is empty or holds spaces' % value)
    return sorted(set(values))


def parse_backend(conf, name):
    """The checked ``Backend`` called ``name``; ConfigError on a bad value.
    """
    group = generic_conf.backend_group_name(name)
    values = conf[group]

    def checked(option, parse):
        return pci.checked('[%s] %s' % (group, option), parse,
                           values[option])

    vendor_id = checked('vendor_id', _optional(pci.hex_id))
    product_ids = checked('product_ids', _each(pci.hex_id))
    addresses = checked('device_addresses', _each(sysfs_mod.PciAddress.parse))
    if product_ids and vendor_id is None:
        raise exception.ConfigError(
            option='[%s] product_ids' % group,
            reason='product ids need vendor_id: they mean nothing without '
                   'their vendor')
    if vendor_id is None and not addresses:
        # NOTE(generic): a backend that selects nothing in particular would
        # claim every function of the host, which is never what was meant.
        raise exception.ConfigError(
            option='[%s] device_addresses' % group,
            reason='set device_addresses or vendor_id to select functions')
    default_rc = 'CUSTOM_' + name.upper()
    return Backend(
        name=name,
        device_type=checked('device_type', _device_type),
        vendor_id=vendor_id,
        product_ids=frozenset(product_ids),
        addresses=frozenset(addresses),
        resource_class=pci.checked(
            '[%s] resource_class' % group, pci.resource_class_name,
            values.resource_class or default_rc),
        traits=tuple(checked('traits', _each(pci.trait_name))),
        services=tuple(checked('services', _services)),
        host_driver=checked('host_driver', _optional(_kernel_name)),
        kernel_module=checked('kernel_module', _optional(_kernel_name)))


def parse_backends(conf):
    """Every configured ``Backend``, in ``[generic_driver] backends`` order.
    """
    names = pci.checked(BACKENDS_OPTION, _backend_names,
                        conf.generic_driver.backends)
    generic_conf.register_dynamic_opts(conf)
    return [parse_backend(conf, name) for name in names]


def _module_loaded(name):
    # NOTE(generic): sysfs names a module with underscores whichever of
    # '-' and '_' it was loaded by, as modprobe takes either.
    return os.path.isdir(sysfs_mod.Sysfs().path(
        'module', name.replace('-', '_')))


class GenericDriver(base.AcceleratorDriver):
    """Reports the PCI functions each configured backend selects.

    Backends are tried in their configured order and a function belongs to
    the first that selects it; PCI bridges never do. Each claimed function
    is one device with one deployable ``<host>_<address>``: a physical
    function with SR-IOV VFs has one accelerator and one PCI handle per VF
    (its VFs are not reported on their own, whatever selects them), any
    other function one accelerator and a PCI handle for itself.

    It is the model for vendor drivers: options checked once at start,
    every report object built by ``cyborg.drivers.pci``, a malformed
    device skipped by ``tools.build_each``, host changes made through
    privsep helpers.
    """

    name = 'generic'
    version = '1.0'
    scrub_group = 'generic_driver'

    def __init__(self):
        self.backends = parse_backends(CONF)
        if not self.backends:
            LOG.info('%s is empty: the generic driver claims no device',
                     BACKENDS_OPTION)

    # --- Discovery. ----------------------------------------------------------

    def discover(self, ctx):
        owners = {}
        for fn in ctx.sysfs.pci_functions:
            backend = pci.first_match(fn, self.backends)
            if backend is not None:
                owners[fn.address] = backend
        claimed = [fn for fn in ctx.sysfs.pci_functions
                   if fn.address in owners]
        return tools.build_each(self.name, claimed,
                                functools.partial(self._device, ctx, owners))

    def _device(self, ctx, owners, fn):
        pf = tools.physical_function(fn) if fn.is_vf else None
        if pf is not None and pf.address in owners:
            # NOTE(generic): a claimed PF reports its VFs as its handles.
            return None
        backend = owners[fn.address]
        vfs = tools.virtual_functions(fn)
        handles = [pci.pci_handle(vf) for vf in vfs] or [pci.pci_handle(fn)]
        deployable = report.Deployable(
            name=pci.deployable_name(ctx.host, fn),
            num_accelerators=len(handles),
            resource_class=backend.resource_class,
            traits=sorted({pci.OWNER_TRAIT, *backend.traits}),
            attach_handles=handles, driver_name=self.name)
        return pci.device(
            fn, backend.device_type or pci.device_type(fn.class_code),
            '%s:%s' % (fn.vendor_id, fn.device_id), [deployable], self.name,
            services=backend.services, vendor_info={'backend': backend.name})

    # --- Host operations. ----------------------------------------------------

    def _backend_of(self, device):
        name = device.vendor_board_info.get('backend')
        for backend in self.backends:
            if backend.name == name:
                return backend
        raise exception.DriverError(
            driver=self.name,
            reason='device %s belongs to no configured backend (%r)'
                   % (tools.control_address(device), name))

    def _handle_functions(self, deployables):
        sysfs = sysfs_mod.Sysfs()
        return [pci.function_at(pci.handle_address(handle), self.name, sysfs)
                for deployable in deployables
                for handle in deployable.attach_handles
                if handle.attach_type == pci.ATTACH_PCI]

    def _bind(self, deployables, kernel_driver):
        for fn in self._handle_functions(deployables):
            pci.bind_function(fn, kernel_driver)

    def install(self, device):
        """Bind the functions guests get to vfio-pci, as pci_driver does.

        Those are the functions of the attach handles: a card's VFs, or the
        function itself.
        """
        # NOTE(generic): a PF with VFs keeps its host driver: unbinding it
        # would tear its VFs down.
        self._bind(device.deployables, pci.VFIO_PCI)

    def uninstall(self, device):
        """Clear driver_override; see ``pci.clear_override``."""
        for fn in self._handle_functions(device.deployables):
            pci.clear_override(fn)

    def install_driver(self):
        """Load the kernel module of each backend that names one.

        :raises exception.DriverError: modprobe failed; the reason carries
            what modprobe said.
        """
        for backend in self.backends:
            module = backend.kernel_module
            if module is None or _module_loaded(module):
                continue
            LOG.info('%s: loading kernel module %s for backend %s',
                     self.name, module, backend.name)
            tools.run(self.name, ['modprobe', module], MODPROBE_TIMEOUT)

    def uninstall_driver(self):
        """Leave the backends' kernel modules loaded."""
        # NOTE(generic): nothing to unload: a module may have been loaded
        # before the agent, and other users (the host itself, another
        # driver's devices) may hold it; unloading it would take their
        # devices away.
        return None

    def update(self, devices, image_path=None):
        """Load the modules of backends added since the last start.

        The agent built this instance from the options as they are now;
        an image is refused, as the default ``program`` does.
        """
        self.install_driver()
        super().update(devices, image_path)

    def attach_host(self, device, deployable):
        """Bind the deployable's functions to the backend's host_driver."""
        backend = self._backend_of(device)
        if backend.host_driver is None:
            raise exception.DriverError(
                driver=self.name,
                reason='[%s] host_driver is not set: backend %s cannot be '
                       'attached to the host'
                       % (generic_conf.backend_group_name(backend.name),
                          backend.name))
        self._bind([deployable], backend.host_driver)

    def detach_host(self, device, deployable):
        """Bind the deployable's functions back to vfio-pci, for guests."""
        self._bind([deployable], pci.VFIO_PCI)

    def scrub(self, device, deployable):
        """Reset each function the deployable's handles pass through (a
        card's VFs, or the function itself), where the kernel offers a
        reset (see ``pci.reset_function``)."""
        return pci.reset_handles(deployable, self.name)

    def health(self, device):
        """The PCI card checks of the controlling function: answers, AER,
        link, hwmon temperatures."""
        return health.check_device(device)

    def metrics(self, device):
        """AER counts, temperature and power from sysfs."""
        return telemetry.sample_device(device)
