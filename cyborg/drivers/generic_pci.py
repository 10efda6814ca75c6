"""Generic PCI driver: passes through what [pci] device_spec matches."""

import fnmatch
import functools
import json
import os
import re

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import generic
from cyborg.drivers import health
from cyborg.drivers import huawei_ascend
from cyborg.drivers import intel_fpga
from cyborg.drivers import intel_qat
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import telemetry
from cyborg.drivers import tools
from cyborg.drivers import xilinx_fpga

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

SPEC_OPTION = '[pci] device_spec'
DEFAULT_RESOURCE_CLASS = 'CUSTOM_PCI'
SERVICES = ('pci.passthrough',)
VFIO = pci.VFIO_PCI

_MATCH_KEYS = ('vendor_id', 'product_id', 'address', 'class_id', 'devname')
_REPORT_KEYS = ('resource_class', 'traits')
_ADDRESS_FIELDS = (('domain', 4), ('bus', 2), ('slot', 2), ('function', 1))
_GLOB = re.compile(r'^[0-9a-f*?]*$')
_ADDRESS = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')

# NOTE(pci): what no device_spec can claim, however broad. The PCI classes
# (first digits of the class code) that are the platform's wherever they
# sit: every bridge (host 0600, ISA/LPC 0601, PCI-to-PCI 0604 such as root
# and switch ports...), interrupt and DMA controllers, timers, RTCs,
# hot-plug controllers, IOMMUs and root complex event collectors
# (0800-0804, 0806, 0807), and SMBus controllers (0c05).
PLATFORM_CLASSES = ('06', '0800', '0801', '0802', '0803', '0804', '0806',
                    '0807', '0c05')
#: Vendors of chipsets (Intel PCH, AMD FCH) and CPUs with integrated I/O.
CHIPSET_VENDORS = ('8086', '1022')
#: The root bus where the chipset's and the CPU's own functions sit; add-in
#: cards sit behind a root port, on another bus.
CHIPSET_BUS = '00'
#: Base class of system peripherals: from a chipset vendor, on any root
#: bus, those are the CPU's own (VT-d, RAS, uncore registers).
SYSTEM_PERIPHERAL = '08'


# --- What the driver never claims. ------------------------------------------

def _has_functions_below(fn):
    """Whether functions sit below ``fn`` in sysfs, as behind a bridge."""
    try:
        entries = os.listdir(fn.path)
    except OSError:
        return False
    return any(_ADDRESS.match(entry) and os.path.isdir(fn.subdir(entry))
               for entry in entries)


def platform_reason(fn):
    """Why ``fn`` belongs to the platform (never claimed), or None."""
    if fn.class_code.startswith(PLATFORM_CLASSES):
        return 'class %s belongs to the platform' % fn.class_code
    if fn.vendor_id in CHIPSET_VENDORS:
        if fn.address.bus == CHIPSET_BUS:
            return 'a chipset function on bus %s' % CHIPSET_BUS
        if fn.class_code.startswith(SYSTEM_PERIPHERAL):
            return "a system peripheral of the CPU's (class %s)" % (
                fn.class_code)
    if _has_functions_below(fn):
        # NOTE(pci): whatever its class code says, a function with
        # functions below it is a bridge.
        return 'PCI functions sit behind it'
    return None


def _ascend_ids():
    """The Huawei Ascend driver's device ids; a malformed one is left out
    (that driver itself refuses to start on it)."""
    ids = set()
    for value in CONF.huawei_ascend.device_ids:
        try:
            ids.add(pci.hex_id(value))
        except ValueError:
            continue
    return ids


def _configured(parse, fallback):
    """``parse(CONF)``, or ``fallback`` when the options do not parse (the
    driver they belong to refuses to start on them)."""
    try:
        return parse(CONF)
    except (exception.ConfigError, cfg.Error, ValueError):
        return fallback


class Owners:
    """Which other driver owns a function, for one discovery pass.

    NOTE(pci): the agent gives drivers no view of one another, so the
    rules of the drivers shipped here are asked directly, whether those
    drivers are enabled on this host or not: a function a specific driver
    knows is left to it.
    """

    def __init__(self, sysfs):
        self.sysfs = sysfs
        qat = _configured(intel_qat.device_ids, intel_qat.KNOWN_DEVICES)
        ascend = _ascend_ids()
        backends = _configured(generic.parse_backends, [])
        self.rules = (
            ('nvidia_gpu', nvidia_gpu.is_gpu),
            ('intel_fpga', lambda fn: (fn.vendor_id == intel_fpga.VENDOR_ID
                                       and fn.device_id in intel_fpga.MODELS)),
            ('xilinx_fpga', xilinx_fpga.is_alveo),
            ('intel_qat', lambda fn: intel_qat.is_qat(fn, qat)),
            ('huawei_ascend', lambda fn: (
                fn.vendor_id == huawei_ascend.HUAWEI
                and fn.device_id in ascend)),
            ('generic', lambda fn: any(b.matches(fn) for b in backends)),
        )

    def _direct(self, fn):
        return next((name for name, owns in self.rules if owns(fn)), None)

    def of(self, fn):
        """The name of the driver owning ``fn``, or None.

        A VF belongs to whoever owns its PF: the specific drivers report
        VFs as handles of their PFs.
        """
        owner = self._direct(fn)
        if owner is None and fn.physfn is not None:
            pf = self.sysfs.pci_function(fn.physfn)
            if pf is not None:
                owner = self._direct(pf)
        return owner

    @functools.cached_property
    def _groups(self):
        groups = {}
        for fn in self.sysfs.pci_functions:
            if fn.iommu_group is not None:
                groups.setdefault(fn.iommu_group, []).append(fn)
        return groups

    def group_reason(self, fn):
        """Why ``fn``'s IOMMU group keeps it from guests, or None.

        NOTE(pci): VFIO hands a guest a whole IOMMU group; a function that
        shares its group with another driver's (a GPU's audio, USB and
        UCSI functions share the GPU's) goes wherever that one goes.
        """
        for other in self._groups.get(fn.iommu_group, ()):
            if other.address == fn.address:
                continue
            owner = self.of(other)
            if owner is not None:
                return ('it shares IOMMU group %s with %s, which the %s '
                        'driver owns' % (fn.iommu_group, other.address,
                                         owner))
        return None


# --- [pci] device_spec. -----------------------------------------------------

def _id_or_any(value):
    return None if value == '*' else pci.hex_id(value)


def _class_prefix(value):
    text = value.strip().lower() if isinstance(value, str) else ''
    text = text.removeprefix('0x')
    if not pci.HEX.match(text) or len(text) not in (2, 4, 6):
        raise ValueError('class_id %r is not 2, 4 or 6 hex digits' % (value,))
    return text


def _address_glob(value):
    """Nova's '[[[domain:]bus:]slot][.function]' with a glob per field."""
    text = value.strip().lower()
    left, dot, function = text.partition('.')
    parts = left.split(':') if left else []
    if len(parts) > 3 or '.' in function:
        raise ValueError('address %r is not [[[domain:]bus:]slot]'
                         '[.function]' % value)
    parts = [''] * (3 - len(parts)) + parts + [function if dot else '']
    fields = {}
    for (field, width), part in zip(_ADDRESS_FIELDS, parts, strict=True):
        part = part or '*'
        literal = pci.HEX.match(part)
        if not _GLOB.match(part) or (literal and len(part) > width):
            raise ValueError('address %r: bad %s %r' % (value, field, part))
        if literal:
            part = part.zfill(width)
        fields[field] = re.compile(fnmatch.translate(part))
    return fields


def _address_regexes(value):
    unknown = set(value) - {field for field, _width in _ADDRESS_FIELDS}
    if unknown:
        raise ValueError('address has unknown field(s) %s'
                         % ', '.join(sorted(unknown)))
    fields = {}
    for field, pattern in value.items():
        if not isinstance(pattern, str):
            raise ValueError('address %s %r is not a string'
                             % (field, pattern))
        try:
            fields[field] = re.compile(pattern)
        except re.error as exc:
            raise ValueError('address %s %r: %s'
                             % (field, pattern, exc)) from None
    return fields


def _address(value):
    if isinstance(value, dict):
        return _address_regexes(value)
    if isinstance(value, str):
        return _address_glob(value)
    raise ValueError('address %r is neither a string nor an object' % value)


def _devname(value):
    if value is None:
        return None
    if not isinstance(value, str) or not value or '/' in value:
        raise ValueError('devname %r is not an interface name' % (value,))
    return value


def _traits(value):
    if isinstance(value, str):
        value = [item for item in value.split(',') if item.strip()]
    if not isinstance(value, list):
        raise ValueError('traits %r is neither a list nor a string' % value)
    return [pci.trait_name(item) for item in value]


class DeviceSpec:
    """One object of ``[pci] device_spec``: what it matches, what it reports.
    """

    def __init__(self, raw):
        if not isinstance(raw, dict):
            raise ValueError('%r is not a JSON object' % (raw,))
        unknown = set(raw) - set(_MATCH_KEYS + _REPORT_KEYS)
        if unknown:
            raise ValueError('unknown key(s) %s' % ', '.join(sorted(unknown)))
        if not set(raw) & set(_MATCH_KEYS):
            # NOTE(pci): an object without match keys would claim every
            # function of the host, which is never what was meant.
            raise ValueError('names none of %s' % ', '.join(_MATCH_KEYS))
        self.vendor_id = _id_or_any(raw.get('vendor_id', '*'))
        self.product_id = _id_or_any(raw.get('product_id', '*'))
        self.class_id = (_class_prefix(raw['class_id'])
                         if 'class_id' in raw else '')
        self.address = _address(raw['address']) if 'address' in raw else {}
        self.devname = _devname(raw.get('devname'))
        self.resource_class = pci.resource_class_name(
            raw.get('resource_class', DEFAULT_RESOURCE_CLASS))
        self.traits = _traits(raw.get('traits', []))

    def matches(self, fn):
        """Whether the ``sysfs.PciFunction`` fits every key of the spec."""
        return (self.vendor_id in (None, fn.vendor_id)
                and self.product_id in (None, fn.device_id)
                and fn.class_code.startswith(self.class_id)
                and all(pattern.fullmatch(getattr(fn.address, field))
                        for field, pattern in self.address.items())
                and (self.devname is None
                     or os.path.isdir(fn.subdir('net', self.devname))))


def _parse_value(value):
    try:
        data = json.loads(value)
        return [DeviceSpec(raw)
                for raw in (data if isinstance(data, list) else [data])]
    except ValueError as exc:
        raise ValueError('%s: %s' % (value, exc)) from None


def parse_specs(values):
    """The DeviceSpecs of the option values; ConfigError on the first bad.
    """
    specs = []
    for value in values:
        specs.extend(pci.checked(SPEC_OPTION, _parse_value, value))
    return specs


class PciDriver(base.AcceleratorDriver):
    """Reports each function a ``[pci] device_spec`` matches for passthrough.

    One device per function, typed by its PCI class, with one deployable
    ``<host>_<address>`` of one accelerator and one PCI attach handle.
    Physical and virtual functions are claimed as the specs match them;
    one whose SR-IOV links dangle is reported with a warning. The platform
    (``platform_reason``) and what a specific driver knows (``Owners``)
    are never claimed, whatever the specs say.
    """

    name = 'pci'
    scrub_group = 'pci'
    #: A spec's devname matches an interface name, which can be renamed
    #: in place.
    watched_files = base.AcceleratorDriver.watched_files + ('net/*',)

    def __init__(self):
        self.specs = parse_specs(CONF.pci.device_spec)
        if not self.specs:
            LOG.info('%s is empty: the generic PCI driver claims no device',
                     SPEC_OPTION)
        # NOTE(pci): a spec that matches what the driver must not claim is
        # logged once per function, not on every discovery pass.
        self._refused = set()

    def spec_for(self, fn):
        """The first spec matching ``fn``, or None when none claims it."""
        return pci.first_match(fn, self.specs)

    def discover(self, ctx):
        owners = Owners(ctx.sysfs)
        return tools.build_each(self.name, ctx.sysfs.pci_functions,
                                functools.partial(self._device, ctx, owners))

    def _refuse(self, fn, reason):
        if (fn.address, reason) not in self._refused:
            self._refused.add((fn.address, reason))
            LOG.info('%s matches %s but is not claimed: %s', SPEC_OPTION,
                     fn.address, reason)

    def _device(self, ctx, owners, fn):
        spec = self.spec_for(fn)
        if spec is None:
            return None
        reason = platform_reason(fn)
        owner = owners.of(fn) if reason is None else None
        if owner is not None:
            reason = 'the %s driver owns it' % owner
        if reason is None:
            reason = owners.group_reason(fn)
        if reason is not None:
            self._refuse(fn, reason)
            return None
        # NOTE(pci): read for their checks alone: an SR-IOV family that is
        # inconsistent in sysfs shows in the device's warnings.
        if fn.is_vf:
            tools.physical_function(fn)
        tools.virtual_functions(fn)
        traits = {pci.OWNER_TRAIT,
                  pci.trait('PCI', pci.vendor_name(fn.vendor_id)),
                  pci.trait('PCI_PRODUCT_ID', fn.device_id), *spec.traits}
        deployable = report.Deployable(
            name=pci.deployable_name(ctx.host, fn), num_accelerators=1,
            resource_class=spec.resource_class, traits=sorted(traits),
            attach_handles=[pci.pci_handle(fn)], driver_name=self.name)
        return pci.device(fn, pci.device_type(fn.class_code),
                          '%s:%s' % (fn.vendor_id, fn.device_id),
                          [deployable], self.name, services=SERVICES)

    def install(self, device):
        """Bind the function to vfio-pci; nothing to do when it already is.
        """
        _sysfs, fn = pci.function_of(device, self.name)
        pci.bind_function(fn, VFIO)

    def uninstall(self, device):
        """Clear driver_override, so the next probe binds the host driver.

        The function stays bound to vfio-pci until it is reprobed (or the
        host reboots): unbinding it here could pull it from under a guest.
        """
        _sysfs, fn = pci.function_of(device, self.name)
        pci.clear_override(fn)

    def scrub(self, device, deployable):
        """Reset the function, where the kernel offers a reset (see
        ``pci.reset_function``)."""
        return pci.reset_handles(deployable, self.name)

    def health(self, device):
        """The PCI card checks: answers, AER, link, hwmon temperatures.

        A function that is disabled (``enable`` reads 0) or bound to no
        driver is idle, not broken: Nova binds it when it is attached.
        """
        return health.check_device(device)

    def metrics(self, device):
        """AER counts, temperature and power from sysfs."""
        return telemetry.sample_device(device)
