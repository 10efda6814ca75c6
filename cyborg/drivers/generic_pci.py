"""Generic PCI driver: passes through what [pci] device_spec matches."""

import dataclasses
import fnmatch
import functools
import json
import os
import re

import os_resource_classes
import os_traits
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs as sysfs_mod
from cyborg.drivers import tools
from cyborg.privsep import sysfs as privsep_sysfs

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

SPEC_OPTION = '[pci] device_spec'
DEFAULT_RESOURCE_CLASS = 'CUSTOM_PCI'
SERVICES = ('pci.passthrough',)
VFIO = 'vfio-pci'

_MATCH_KEYS = ('vendor_id', 'product_id', 'address', 'class_id', 'devname')
_REPORT_KEYS = ('resource_class', 'traits')
_ADDRESS_FIELDS = (('domain', 4), ('bus', 2), ('slot', 2), ('function', 1))
# NOTE(pci): bridges carry the host's own PCI topology; passing one through
# (or binding it to vfio-pci) would cut the host off its devices, so no
# spec, however broad, claims them.
_BRIDGE_CLASS = '06'
_HEX = re.compile(r'^[0-9a-f]+$')
_GLOB = re.compile(r'^[0-9a-f*?]*$')
_CUSTOM = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_MAX_NAME = 255


# --- Shared by the PCI drivers. ---------------------------------------------
# NOTE(pci): what the QAT and Ascend drivers share with this one beyond
# drivers.pci and drivers.tools (checked option values, finding a reported
# device's function again) lives here, so it is written once.

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
    if not _HEX.match(text) or len(text) > digits:
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


def function_of(device, driver):
    """``(sysfs, PciFunction)`` of a reported device, from a fresh scan."""
    sysfs = sysfs_mod.Sysfs()
    address = tools.control_address(device)
    fn = sysfs.pci_function(address)
    if fn is None:
        raise exception.DriverError(
            driver=driver, reason='PCI function %s is not in sysfs' % address)
    return sysfs, fn


# --- [pci] device_spec. -----------------------------------------------------

def _id_or_any(value):
    return None if value == '*' else hex_id(value)


def _class_prefix(value):
    text = value.strip().lower() if isinstance(value, str) else ''
    text = text.removeprefix('0x')
    if not _HEX.match(text) or len(text) not in (2, 4, 6):
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
        if not _GLOB.match(part) or (_HEX.match(part) and len(part) > width):
            raise ValueError('address %r: bad %s %r' % (value, field, part))
        if _HEX.match(part):
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
    return [trait_name(item) for item in value]


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
        self.resource_class = resource_class_name(
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
        specs.extend(checked(SPEC_OPTION, _parse_value, value))
    return specs


def _override(fn):
    value = fn.read('driver_override')
    return None if value in (None, '', '(null)') else value


class PciDriver(base.AcceleratorDriver):
    """Reports each function a ``[pci] device_spec`` matches for passthrough.

    One device per function, typed by its PCI class, with one deployable
    ``<host>_<address>`` of one accelerator and one PCI attach handle.
    Physical and virtual functions are claimed as the specs match them;
    a function whose SR-IOV links dangle is skipped with a log line.
    """

    name = 'pci'

    def __init__(self):
        self.specs = parse_specs(CONF.pci.device_spec)
        if not self.specs:
            LOG.info('%s is empty: the generic PCI driver claims no device',
                     SPEC_OPTION)

    def spec_for(self, fn):
        """The first spec matching ``fn``, or None when none claims it."""
        if fn.class_code.startswith(_BRIDGE_CLASS):
            return None
        return next((spec for spec in self.specs if spec.matches(fn)), None)

    def discover(self, ctx):
        return tools.build_each(self.name, ctx.sysfs.pci_functions,
                                functools.partial(self._device, ctx))

    def _device(self, ctx, fn):
        spec = self.spec_for(fn)
        if spec is None:
            return None
        # NOTE(pci): called for their checks alone: a function whose SR-IOV
        # family is inconsistent in sysfs is not handed to a guest.
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
        sysfs, fn = function_of(device, self.name)
        if _override(fn) != VFIO:
            privsep_sysfs.write(sysfs.root,
                                os.path.join(fn.path, 'driver_override'),
                                VFIO)
        if fn.driver == VFIO:
            return
        if fn.driver:
            privsep_sysfs.write(sysfs.root,
                                os.path.join(fn.path, 'driver', 'unbind'),
                                str(fn.address))
        # NOTE(pci): with driver_override set, a probe binds vfio-pci only,
        # whatever driver the function's ids would otherwise load.
        privsep_sysfs.write(sysfs.root,
                            sysfs.path('bus', 'pci', 'drivers_probe'),
                            str(fn.address))

    def uninstall(self, device):
        """Clear driver_override, so the next probe binds the host driver.

        The function stays bound to vfio-pci until it is reprobed (or the
        host reboots): unbinding it here could pull it from under a guest.
        """
        sysfs, fn = function_of(device, self.name)
        if _override(fn) is not None:
            privsep_sysfs.write(sysfs.root,
                                os.path.join(fn.path, 'driver_override'),
                                '\n')

    def health(self, device):
        """Faulty only when the function's config space cannot be read.

        A function that is disabled (``enable`` reads 0) or bound to no
        driver is idle, not broken: Nova binds it when it is attached. A
        VF is judged by its PF (see below) once sysfs still lists it.
        """
        sysfs = sysfs_mod.Sysfs()
        physfn = sysfs.path('bus', 'pci', 'devices',
                            tools.control_address(device), 'physfn')
        if os.path.islink(physfn):
            # NOTE(pci): the SR-IOV spec has a VF's vendor and device ids
            # read all ones in its own config space, so only its PF can
            # tell whether the card still answers.
            pf = sysfs_mod.PciAddress.parse(
                os.path.basename(os.readlink(physfn)))
            parent = report.ControlPath(pci.CONTROLPATH_PCI, pf.as_dict())
            device = dataclasses.replace(device, controlpath=parent)
        return tools.pci_health(device)
