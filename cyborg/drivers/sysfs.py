"""The one walker of the PCI tree in sysfs that every driver reads through.

It reads the kernel's files directly (no ``lspci``) under ``[agent]
sysfs_root``, so tests and simulations point it at a fixture tree. A device
whose entries are missing, unreadable or malformed is skipped with one log
line; the others are still returned.
"""

import dataclasses
import functools
import os
import re

from oslo_config import cfg
from oslo_log import log as logging

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

_ADDRESS = re.compile(
    r'^(?P<domain>[0-9a-f]{4}):(?P<bus>[0-9a-f]{2}):'
    r'(?P<slot>[0-9a-f]{2})\.(?P<function>[0-7])$')
_HEX_ID = re.compile(r'^0x[0-9a-f]{4}$')
_HEX_CLASS = re.compile(r'^0x[0-9a-f]{6}$')


class MalformedEntry(ValueError):
    """A sysfs entry is missing or does not parse; the device is unusable."""


@dataclasses.dataclass(frozen=True, order=True)
class PciAddress:
    """A PCI function address: domain, bus, slot (device) and function."""

    domain: str
    bus: str
    slot: str
    function: str

    @classmethod
    def parse(cls, text):
        match = _ADDRESS.match(text.strip().lower())
        if match is None:
            raise MalformedEntry('not a PCI address: %r' % text)
        return cls(**match.groupdict())

    def __str__(self):
        return '%s:%s:%s.%s' % (self.domain, self.bus, self.slot,
                                self.function)

    def as_dict(self):
        """The shape Nova and upstream use in attach handles."""
        return {'domain': self.domain, 'bus': self.bus, 'device': self.slot,
                'function': self.function}

    @property
    def slug(self):
        """The address with only characters allowed in names and traits."""
        return '%s_%s_%s_%s' % (self.domain, self.bus, self.slot,
                                self.function)


@dataclasses.dataclass(frozen=True)
class MdevType:
    """One mediated device type a parent device offers."""

    type_id: str
    name: str
    available_instances: int
    device_api: str
    description: str
    created: int


class PciFunction:
    """One PCI function as sysfs shows it; optional files are read lazily."""

    def __init__(self, sysfs, address, path, vendor_id, device_id,
                 class_code):
        self.sysfs = sysfs
        self.address = address
        self.path = path
        #: Lower-case hex without 0x: '10de', '1eb8', '030200'.
        self.vendor_id = vendor_id
        self.device_id = device_id
        self.class_code = class_code

    def __repr__(self):
        return '<PciFunction %s %s:%s class %s>' % (
            self.address, self.vendor_id, self.device_id, self.class_code)

    def read(self, name):
        """The stripped content of a file in the device dir, or None."""
        return _read(os.path.join(self.path, name))

    def _hex_file(self, name):
        value = self.read(name)
        if value is None:
            return None
        if not _HEX_ID.match(value.lower()):
            raise MalformedEntry('%s/%s: %r' % (self.address, name, value))
        return value[2:].lower()

    def _int_file(self, name):
        value = self.read(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise MalformedEntry('%s/%s: %r' % (self.address, name,
                                                value)) from None

    def _link_name(self, name):
        target = _readlink(os.path.join(self.path, name))
        return os.path.basename(target) if target else None

    @property
    def class_id(self):
        """Base class and subclass, e.g. '0302' for a 3D controller."""
        return self.class_code[:4]

    @functools.cached_property
    def subsystem_vendor_id(self):
        return self._hex_file('subsystem_vendor')

    @functools.cached_property
    def subsystem_device_id(self):
        return self._hex_file('subsystem_device')

    @functools.cached_property
    def revision(self):
        value = self.read('revision')
        return value[2:].lower() if value and value.startswith('0x') else None

    @functools.cached_property
    def numa_node(self):
        node = self._int_file('numa_node')
        return None if node is None or node < 0 else node

    @functools.cached_property
    def driver(self):
        """Name of the host kernel driver bound to the function, or None."""
        return self._link_name('driver')

    @functools.cached_property
    def iommu_group(self):
        return self._link_name('iommu_group')

    @functools.cached_property
    def sriov_totalvfs(self):
        return self._int_file('sriov_totalvfs')

    @functools.cached_property
    def sriov_numvfs(self):
        return self._int_file('sriov_numvfs')

    @functools.cached_property
    def physfn(self):
        """Address of the parent PF when this function is an SR-IOV VF."""
        name = self._link_name('physfn')
        return PciAddress.parse(name) if name else None

    @property
    def is_vf(self):
        return self.physfn is not None

    @functools.cached_property
    def virtfns(self):
        """Addresses of this PF's VFs, in virtfn index order."""
        found = []
        for entry in _listdir(self.path):
            if entry.startswith('virtfn') and entry[6:].isdigit():
                name = self._link_name(entry)
                if name:
                    found.append((int(entry[6:]), PciAddress.parse(name)))
        return [address for _index, address in sorted(found)]

    def mdev_types(self):
        """The mediated device types this function offers, by type id."""
        base = os.path.join(self.path, 'mdev_supported_types')
        types = {}
        for type_id in _listdir(base):
            tdir = os.path.join(base, type_id)
            try:
                available = int(_read(os.path.join(
                    tdir, 'available_instances')) or '')
            except ValueError:
                LOG.warning('Skipping mdev type %s of %s: unreadable '
                            'available_instances', type_id, self.address)
                continue
            types[type_id] = MdevType(
                type_id=type_id,
                name=_read(os.path.join(tdir, 'name')) or type_id,
                available_instances=available,
                device_api=_read(os.path.join(tdir, 'device_api')) or '',
                description=_read(os.path.join(tdir, 'description')) or '',
                created=len(_listdir(os.path.join(tdir, 'devices'))))
        return types

    def subdir(self, *parts):
        """Path of a directory below the device dir (may not exist)."""
        return os.path.join(self.path, *parts)


class Sysfs:
    """A read-only view of one sysfs tree, scanned once per discovery pass.
    """

    def __init__(self, root=None):
        self.root = root or CONF.agent.sysfs_root

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    @functools.cached_property
    def pci_functions(self):
        """Every well-formed PCI function, sorted by address."""
        base = self.path('bus', 'pci', 'devices')
        functions = []
        for name in sorted(_listdir(base)):
            try:
                functions.append(self._pci_function(base, name))
            except MalformedEntry as exc:
                LOG.warning('Skipping PCI device %s: %s', name, exc)
        return functions

    @functools.cached_property
    def _by_address(self):
        return {fn.address: fn for fn in self.pci_functions}

    def pci_function(self, address):
        """The function at ``address`` (PciAddress or string), or None."""
        if isinstance(address, str):
            address = PciAddress.parse(address)
        return self._by_address.get(address)

    def _pci_function(self, base, name):
        address = PciAddress.parse(name)
        path = os.path.join(base, name)
        values = {}
        for field, pattern in (('vendor', _HEX_ID), ('device', _HEX_ID),
                               ('class', _HEX_CLASS)):
            value = _read(os.path.join(path, field))
            if value is None:
                raise MalformedEntry('missing or unreadable %s' % field)
            value = value.lower()
            if not pattern.match(value):
                raise MalformedEntry('bad %s %r' % (field, value))
            values[field] = value[2:]
        return PciFunction(self, address, path, values['vendor'],
                           values['device'], values['class'])

    def class_devices(self, class_name):
        """Entries of /sys/class/<class_name> as {name: resolved path}."""
        base = self.path('class', class_name)
        found = {}
        for name in sorted(_listdir(base)):
            path = os.path.join(base, name)
            if os.path.isdir(path):
                found[name] = os.path.realpath(path)
        return found

    def read(self, *parts):
        return _read(self.path(*parts))


def _read(path):
    try:
        with open(path, encoding='ascii', errors='strict') as handle:
            return handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []
