"""The one walker of the PCI tree in sysfs that every driver reads through."""

# NOTE(sysfs): it reads the kernel's files directly (no lspci) under
# [agent] sysfs_root, so tests and simulations point it at a fixture tree.
# A defect costs only what depends on it: a function whose identity files
# (vendor, device, class) do not parse is no function; any other file that
# is missing where it should not be, unreadable or malformed leaves its
# field unknown and is recorded as a Defect of the function, which the
# driver reports with the device. Each defect is logged once per process.

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
    """A sysfs entry is missing or does not parse."""


@dataclasses.dataclass(frozen=True, order=True)
class Defect:
    """A file of a device that could not be read as the kernel writes it.

    ``path`` is relative to the sysfs root, as on a real host under /sys.
    """

    path: str
    reason: str

    def __str__(self):
        return '%s: %s' % (self.path, self.reason)


# NOTE(sysfs): defects already logged by this process; a damaged file is
# worth one warning, not one per discovery pass.
_LOGGED = set()


def forget_logged():
    """Log every defect again the next time it is met (tests)."""
    _LOGGED.clear()


def log_once(defect, what='device'):
    """Log ``defect`` the first time this process meets it."""
    if defect not in _LOGGED:
        _LOGGED.add(defect)
        LOG.warning('Damaged sysfs entry of a %s, %s', what, defect)


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
        #: What could not be read of this function (``Defect`` list).
        self.defects = []

    def __repr__(self):
        return '<PciFunction %s %s:%s class %s>' % (
            self.address, self.vendor_id, self.device_id, self.class_code)

    def read(self, name):
        """The stripped content of a file in the device dir, or None."""
        return _read(os.path.join(self.path, name))

    def relpath(self, *parts):
        """A path below this function, as it reads under /sys."""
        return os.path.join('bus', 'pci', 'devices', str(self.address),
                            *parts)

    def defect(self, reason, *parts):
        """Record (and log once) that ``parts`` of this function could not
        be read; returns the Defect."""
        found = Defect(self.relpath(*parts), reason)
        if found not in self.defects:
            self.defects.append(found)
        log_once(found, 'PCI function')
        return found

    def optional(self, name, parse, what):
        """``parse`` of the file ``name``; None when it is absent, and None
        with a defect when it is there but unreadable or malformed."""
        path = os.path.join(self.path, name)
        value = _read(path)
        if value is None:
            if os.path.lexists(path):
                self.defect('unreadable %s' % what, name)
            return None
        try:
            return parse(value)
        except ValueError:
            self.defect('%s %r does not parse' % (what, value[:40]), name)
            return None

    def _hex_file(self, name):
        return self.optional(name, _hex_id, name.replace('_', ' '))

    def _int_file(self, name):
        return self.optional(name, int, name.replace('_', ' '))

    def _link_name(self, name):
        target = readlink(os.path.join(self.path, name))
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
        """Address of the parent PF when this function is an SR-IOV VF;
        None for a PF, and for a VF whose link is damaged (a defect)."""
        name = self._link_name('physfn')
        if name is None:
            return None
        try:
            return PciAddress.parse(name)
        except MalformedEntry:
            self.defect('physfn names no PCI address (%r)' % name, 'physfn')
            return None

    @property
    def is_vf(self):
        return self.physfn is not None

    @functools.cached_property
    def virtfn_links(self):
        """``(link name, PciAddress)`` of this PF's VFs, in virtfn index
        order; a link that is unreadable or names no address is a defect
        and leaves that VF out."""
        found = []
        for entry in listdir(self.path):
            if not (entry.startswith('virtfn') and entry[6:].isdigit()):
                continue
            name = self._link_name(entry)
            try:
                address = PciAddress.parse(name or '')
            except MalformedEntry:
                self.defect('not a link to a PCI function', entry)
                continue
            found.append((int(entry[6:]), entry, address))
        return [(entry, address) for _i, entry, address in sorted(found)]

    @property
    def virtfns(self):
        """Addresses of this PF's VFs, in virtfn index order."""
        return [address for _entry, address in self.virtfn_links]

    def mdev_types(self):
        """The mediated device types this function offers, by type id."""
        base = os.path.join(self.path, 'mdev_supported_types')
        types = {}
        for type_id in sorted(listdir(base)):
            tdir = os.path.join(base, type_id)
            try:
                available = int(_read(os.path.join(
                    tdir, 'available_instances')) or '')
            except ValueError:
                self.defect('unreadable available_instances: the type is '
                            'left out', 'mdev_supported_types', type_id,
                            'available_instances')
                continue
            types[type_id] = MdevType(
                type_id=type_id,
                name=_read(os.path.join(tdir, 'name')) or type_id,
                available_instances=available,
                device_api=_read(os.path.join(tdir, 'device_api')) or '',
                description=_read(os.path.join(tdir, 'description')) or '',
                created=len(listdir(os.path.join(tdir, 'devices'))))
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
        for name in sorted(listdir(base)):
            try:
                functions.append(self._pci_function(base, name))
            except MalformedEntry as exc:
                # NOTE(sysfs): without its identity a function is nothing
                # a driver may claim; it is no device at all.
                log_once(Defect(os.path.join('bus', 'pci', 'devices', name),
                                str(exc)), 'PCI function, left out')
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
        for name in sorted(listdir(base)):
            path = os.path.join(base, name)
            if os.path.isdir(path):
                found[name] = os.path.realpath(path)
        return found

    def read(self, *parts):
        return _read(self.path(*parts))


def _hex_id(value):
    if not _HEX_ID.match(value.lower()):
        raise ValueError(value)
    return value[2:].lower()


def _read(path):
    try:
        with open(path, encoding='ascii', errors='strict') as handle:
            return handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None


def readlink(path):
    """The target of link ``path``; None when it cannot be read."""
    try:
        return os.readlink(path)
    except OSError:
        return None


def listdir(path):
    """The names in directory ``path``; [] when it cannot be listed."""
    try:
        return os.listdir(path)
    except OSError:
        return []


def read_value(path):
    """What ``PciFunction.read`` returns for ``path``, with fewer calls:
    the stripped ASCII text of the file's first 4096 bytes, or None."""
    try:
        # NOTE(sysfs): no effect on files; a FIFO in a damaged tree reads
        # empty instead of waiting for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        text = data.decode('ascii')
    except UnicodeDecodeError:
        return None
    return text.replace('\r\n', '\n').replace('\r', '\n').strip()
