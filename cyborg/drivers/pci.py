"""What the PCI drivers share: report objects, option checks, lookups."""

# NOTE(pci): every driver derives its names, traits, handles and board info
# from a sysfs.PciFunction here and checks its ids and Placement names here,
# so drivers only decide *which* functions they claim and how they group
# them, and each rule is written once.

import functools
import os
import re

import os_resource_classes
import os_traits
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import report
from cyborg.drivers import sysfs as sysfs_mod
from cyborg.drivers import tools
from cyborg.privsep import sysfs as privsep_sysfs

LOG = logging.getLogger(__name__)

ATTACH_PCI = 'PCI'
CONTROLPATH_PCI = 'PCI'
OWNER_TRAIT = 'OWNER_CYBORG'
#: The kernel driver that hands a function to guests.
VFIO_PCI = 'vfio-pci'

# NOTE(pci): bridges carry the host's own PCI topology; passing one through
# (or binding it to vfio-pci) would cut the host off its devices, so no
# driver claims them, however broadly it is configured.
_BRIDGE_CLASS = '06'

# PCI base class / subclass (first four hex digits of the class code) to
# Cyborg device type; the first match wins, then the base class alone.
_CLASS_TYPES = (
    ('0302', 'GPU'), ('0300', 'GPU'), ('03', 'GPU'),
    ('1200', 'AICHIP'), ('12', 'FPGA'),
    ('1080', 'QAT'), ('10', 'QAT'),
    ('0b40', 'FPGA'),
    ('02', 'NIC'),
    ('0108', 'NVME'), ('01', 'SSD'),
)

# Vendors the traits name rather than number.
VENDOR_NAMES = {
    '10de': 'NVIDIA', '8086': 'INTEL', '10ee': 'XILINX', '19e5': 'HUAWEI',
    '1bd4': 'INSPUR', '1002': 'AMD', '15b3': 'MELLANOX', '1924': 'SOLARFLARE',
    '1af4': 'VIRTIO', '1d0f': 'AMAZON', '1ded': 'ALIBABA',
}

_UNSAFE = re.compile(r'[^A-Z0-9_]')
#: Lower-case hex digits; generic_pci checks its spec fields by it too.
HEX = re.compile(r'^[0-9a-f]+$')
_CUSTOM = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_MAX_NAME = 255


def device_type(class_code):
    """Cyborg's device type for a PCI class code such as '030200'."""
    for prefix, kind in _CLASS_TYPES:
        if class_code.startswith(prefix):
            return kind
    return 'PCI'


def first_match(fn, selectors):
    """The first selector whose ``matches(fn)`` holds, or None.

    Configured selectors (specs, backends) claim functions in their order;
    a bridge is claimed by none.
    """
    if fn.class_code.startswith(_BRIDGE_CLASS):
        return None
    return next((item for item in selectors if item.matches(fn)), None)


def trait(*parts):
    """A valid custom trait from parts: CUSTOM_ + upper-case, '_'-joined."""
    name = '_'.join(str(p) for p in parts if p not in (None, ''))
    return 'CUSTOM_' + _UNSAFE.sub('_', name.upper())


def vendor_name(vendor_id):
    return VENDOR_NAMES.get(vendor_id, vendor_id.upper())


def deployable_name(host, fn, suffix=None):
    """Globally unique and stable: the host plus the PCI address."""
    name = '%s_%s' % (host, fn.address)
    return '%s_%s' % (name, suffix) if suffix else name


def controlpath(fn):
    return report.ControlPath(cpid_type=CONTROLPATH_PCI,
                              cpid_info=fn.address.as_dict())


def pci_handle(fn, **extra):
    """An attach handle passing one PCI function through."""
    info = fn.address.as_dict()
    info.update(extra)
    return report.AttachHandle(attach_type=ATTACH_PCI, attach_info=info)


def std_board_info(fn):
    """The PCI identity of a function, as upstream's std_board_info."""
    info = {'vendor_id': '0x' + fn.vendor_id, 'device_id': '0x' + fn.device_id,
            'class': '0x' + fn.class_code}
    if fn.subsystem_vendor_id:
        info['subsystem_vendor_id'] = '0x' + fn.subsystem_vendor_id
    if fn.subsystem_device_id:
        info['subsystem_device_id'] = '0x' + fn.subsystem_device_id
    if fn.numa_node is not None:
        info['numa_node'] = fn.numa_node
    if fn.driver:
        info['kernel_driver'] = fn.driver
    if fn.iommu_group:
        info['iommu_group'] = fn.iommu_group
    return info


def device(fn, kind, model, deployables, driver_name, services=(),
           vendor_info=None, functions=(), defects=(), offer_reason=None):
    """A report.Device for the PCI function that controls the card.

    Its warnings are the defects of ``fn``, of every function its attach
    handles pass through, of ``functions`` (others the driver read) and
    ``defects`` (the driver's own ``sysfs.Defect`` list). ``offer_reason``
    says why a device without ``deployables`` offers nothing.
    """
    # NOTE(pci): the board info reads fn's optional files, whose defects
    # the warnings must then include.
    board = std_board_info(fn)
    return report.Device(
        type=kind, vendor='0x' + fn.vendor_id, model=model,
        controlpath=controlpath(fn), std_board_info=board,
        vendor_board_info=dict(vendor_info or {}),
        deployables=list(deployables), driver_name=driver_name,
        services=sorted(set(services)),
        warnings=warnings(fn, deployables, functions, defects),
        offer_reason=None if deployables else offer_reason)


def warnings(fn, deployables, functions=(), defects=()):
    """The defects of a device's functions, as report.Device.warnings."""
    seen = {fn.address: fn}
    for other in functions:
        seen.setdefault(other.address, other)
    for dep in deployables:
        for handle in dep.attach_handles:
            if handle.attach_type not in (ATTACH_PCI, 'MDEV'):
                continue
            other = fn.sysfs.pci_function(handle_address(handle))
            if other is not None:
                seen.setdefault(other.address, other)
    found = set(defects)
    for other in seen.values():
        found.update(other.defects)
    return [str(defect) for defect in sorted(found)]


# --- Option values and reported devices. ------------------------------------

def checked(option, parse, value):
    """``parse(value)``, or the ConfigError that stops the agent at start."""
    try:
        return parse(value)
    except ValueError as exc:
        raise exception.ConfigError(option=option, reason=str(exc)) from None


def hex_id(value, digits=4):
    """A PCI id as sysfs.PciFunction holds it: '0x10DE' -> '10de'."""
    text = value.strip().lower() if isinstance(value, str) else ''
    text = text.removeprefix('0x')
    if not HEX.match(text) or len(text) > digits:
        raise ValueError('%r is not a hex id of at most %d digits'
                         % (value, digits))
    return text.zfill(digits)


@functools.cache
def _standard_traits():
    return frozenset(os_traits.get_traits())


def _placement_name(value, standard, what):
    # NOTE(pci): like Nova's [pci] alias, a name that is not a standard one
    # is taken as custom and gets the prefix Placement requires.
    if not isinstance(value, str) or not value.strip():
        raise ValueError('%s %r is not a non-empty string' % (what, value))
    name = value.strip().upper()
    if name in standard:
        return name
    if not name.startswith('CUSTOM_'):
        name = 'CUSTOM_' + name
    if not _CUSTOM.match(name) or len(name) > _MAX_NAME:
        raise ValueError('%s %r is not valid: use A-Z, 0-9 and _ only'
                         % (what, value))
    return name


def resource_class_name(value):
    """A valid Placement resource class from an option value."""
    return _placement_name(value, os_resource_classes.STANDARDS,
                           'resource class')


def trait_name(value):
    """A valid Placement trait from an option value."""
    return _placement_name(value, _standard_traits(), 'trait')


def function_at(address, driver, sysfs=None):
    """The ``PciFunction`` at ``address``, from ``sysfs`` or a fresh scan.

    :raises exception.DriverError: naming ``driver``, when no function is
        there any more.
    """
    sysfs = sysfs or sysfs_mod.Sysfs()
    fn = sysfs.pci_function(address)
    if fn is None:
        raise exception.DriverError(
            driver=driver, reason='PCI function %s is not in sysfs' % address)
    return fn


def function_of(device, driver):
    """``(sysfs, PciFunction)`` of a reported device, from a fresh scan."""
    fn = function_at(tools.control_address(device), driver)
    return fn.sysfs, fn


def handle_address(handle):
    """The ``sysfs.PciAddress`` a PCI attach handle passes through."""
    info = handle.attach_info
    return sysfs_mod.PciAddress(info['domain'], info['bus'], info['device'],
                                info['function'])


# --- Binding functions to kernel drivers. -----------------------------------

def _driver_override(fn):
    """The driver ``fn`` is reserved for, or None when it is not."""
    value = fn.read('driver_override')
    return None if value in (None, '', '(null)') else value


def bind_function(fn, kernel_driver):
    """Bind the PCI function ``fn`` to ``kernel_driver``, through privsep.

    Reserves the function for that driver (``driver_override``), unbinds
    the driver it has and asks the kernel to probe it again. A function
    bound to ``kernel_driver`` already is left where it is.
    """
    root = fn.sysfs.root
    if _driver_override(fn) != kernel_driver:
        privsep_sysfs.write(root, os.path.join(fn.path, 'driver_override'),
                            kernel_driver)
    if fn.driver == kernel_driver:
        return
    if fn.driver:
        privsep_sysfs.write(root, os.path.join(fn.path, 'driver', 'unbind'),
                            str(fn.address))
    # NOTE(pci): with driver_override set, a probe binds that driver only,
    # whatever driver the function's ids would otherwise load.
    privsep_sysfs.write(root, fn.sysfs.path('bus', 'pci', 'drivers_probe'),
                        str(fn.address))


def clear_override(fn):
    """Clear ``driver_override``, so the next probe binds the usual driver.

    The function stays bound where it is until it is reprobed (or the host
    reboots): unbinding it here could pull it from under a guest.
    """
    if _driver_override(fn) is not None:
        privsep_sysfs.write(fn.sysfs.root,
                            os.path.join(fn.path, 'driver_override'), '\n')


# --- Scrubbing between tenants. ----------------------------------------------

def reset_function(fn: sysfs_mod.PciFunction, driver: str) -> bool:
    """Reset the PCI function ``fn`` through its ``reset`` file.

    NOTE(scrub): Documentation/ABI/testing/sysfs-bus-pci: the kernel
    creates ``reset`` only for a function it can reset on its own, and
    writing 1 to it performs the reset, by the first method that
    ``reset_method`` lists (FLR, AF FLR, PM, bus...). An operator who
    writes an empty string to ``reset_method`` turns reset off; it then
    reads empty and a write to ``reset`` fails.

    :returns: True when the function was reset, False when the kernel
        offers no reset for it.
    :raises exception.DriverError: naming ``driver``, when the reset
        failed.
    """
    path = fn.subdir('reset')
    if not os.path.isfile(path):
        return False
    if fn.read('reset_method') == '':
        LOG.info('%s: %s has reset turned off (reset_method is empty); '
                 'not reset', driver, fn.address)
        return False
    try:
        privsep_sysfs.write(fn.sysfs.root, path, '1')
    except OSError as exc:
        raise exception.DriverError(
            driver=driver, reason='cannot reset PCI function %s: %s'
            % (fn.address, exc.strerror or exc)) from exc
    LOG.info('%s: reset PCI function %s', driver, fn.address)
    return True


def handle_functions(deployable: report.Deployable, driver: str,
                     sysfs: sysfs_mod.Sysfs | None = None
                     ) -> list[sysfs_mod.PciFunction]:
    """The ``PciFunction`` of each PCI attach handle of ``deployable``.

    :raises exception.DriverError: a function is no longer in sysfs.
    """
    sysfs = sysfs or sysfs_mod.Sysfs()
    return [function_at(handle_address(handle), driver, sysfs)
            for handle in deployable.attach_handles
            if handle.attach_type == ATTACH_PCI]


def reset_handles(deployable: report.Deployable, driver: str) -> bool:
    """Reset every function the PCI handles of ``deployable`` pass through.

    Every function is looked up before any is reset, so a deployable one
    of whose functions is gone fails without a half-done scrub.

    :returns: True when at least one function was reset.
    :raises exception.DriverError: a function is gone or its reset failed.
    """
    done = False
    for fn in handle_functions(deployable, driver):
        done = reset_function(fn, driver) or done
    return done


def reprogram_or_reset(driver, device: report.Device,
                       deployable: report.Deployable, image: str) -> bool:
    """The FPGA scrub: load ``image`` through ``driver.program`` when one
    is given, else reset the functions guests get.

    :returns: True when an image was loaded or a function reset.
    :raises exception.DriverError: the image could not be loaded, or a
        function is gone or its reset failed.
    """
    if image:
        # NOTE(scrub): whatever the previous tenant left in the region is
        # overwritten; a reset alone would leave its bitstream loaded.
        handle_functions(deployable, driver.name)
        driver.program(device, deployable, image)
        LOG.info('%s: loaded the default image %s onto %s', driver.name,
                 image, deployable.name)
        return True
    return reset_handles(deployable, driver.name)
