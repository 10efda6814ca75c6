"""A cheap fingerprint of a sysfs tree that changes when its inventory may."""

# NOTE(fingerprint): kernfs makes up attribute values when they are read,
# and its timestamps say nothing: a directory's mtime is set when its inode
# is first looked up and does not move when entries come and go (kernfs
# updates it only for nodes that carry explicit attributes, after a chmod
# or a chown), nor does a file's when its value changes. What does change
# is the set of entries: a VF adds virtfn links and a PCI function, an mdev
# adds a directory below its parent, binding a driver replaces the driver
# link; a function removed and added again is a new node, with a new inode
# number, under bus/pci/devices. So on sysfs the fingerprint lists those
# entries (bus/pci/devices with inode numbers), reads each function's
# driver link and the values drivers say change in place ("watched"
# files). A tree that is not sysfs (a test fixture) changes a file's mtime
# and size when it is edited and may reuse inode numbers, so there the
# fingerprint also stats each function's own files and reads its driver,
# physfn and virtfn links.

import fnmatch
import functools
import os
import re
import time

from cyborg.drivers import sysfs

#: Links of a function that change at run time; virtfn<N> too.
FINGERPRINT_LINKS = frozenset(('driver', 'physfn'))
#: Directories, below the root, whose entries the fingerprint lists.
FINGERPRINT_DIRS = (('bus', 'pci', 'drivers'), ('module',),
                    ('class', 'fpga'), ('class', 'fpga_region'),
                    ('class', 'mdev_bus'))
# A write stamped within this many nanoseconds of the fingerprint may be
# followed by another with the same stamp (coarse clocks).
_RACY_NS = 50 * 1000 * 1000
_MAGIC = re.compile(r'[*?[]')
# Roots taken for sysfs although they are not (benchmarks, tests).
_AS_KERNFS = set()


def treat_as_kernfs(root, enabled=True):
    """Fingerprint the tree at ``root`` as sysfs, whatever it lies on.

    A benchmark measures what a real host costs with it; a test checks
    what the sysfs rules alone see.
    """
    real = os.path.realpath(root)
    if enabled:
        _AS_KERNFS.add(real)
    else:
        _AS_KERNFS.discard(real)


def is_kernfs(root):
    """Whether ``root`` lies on a sysfs mount (or is treated as such)."""
    real = os.path.realpath(root)
    return real in _AS_KERNFS or _mount_type(real) == 'sysfs'


@functools.cache
def _mount_type(real):
    """The type of the file system ``real`` lies on, per mountinfo."""
    found, fstype = '', None
    try:
        with open('/proc/self/mountinfo') as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields, _sep, rest = line.partition(' - ')
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = parts[4].replace('\\040', ' ')
        inside = real == point or real.startswith(point.rstrip('/') + '/')
        if inside and len(point) >= len(found):
            found, fstype = point, rest.split()[0]
    return fstype


class Fingerprint:
    """What the discovery cache compares of a sysfs tree between passes.

    ``watched``: glob patterns, relative to a PCI function's directory, of
    files whose content is compared. ``racy`` says that a file of a tree
    that is not sysfs changed too recently for its mtime to tell a later
    change apart: the tree must be read again, not trusted.
    """

    def __init__(self, root, watched=()):
        self.root = root
        self.racy = False
        self._patterns = [
            (parts[0], bool(_MAGIC.search(parts[0])), parts)
            for parts in sorted({tuple(p.strip('/').split('/'))
                                 for p in watched})]
        self._files = not is_kernfs(root)
        self._since = time.time_ns() - _RACY_NS
        self.value = self._tree()

    def __eq__(self, other):
        return isinstance(other, Fingerprint) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def _tree(self):
        parts = [_entries(os.path.join(self.root, *rel))
                 for rel in FINGERPRINT_DIRS]
        base = os.path.join(self.root, 'bus', 'pci', 'devices') + os.sep
        functions = _entries(base)
        parts.append(functions)
        # NOTE(fingerprint): plain concatenation rather than os.path.join,
        # which costs as much as a system call here, a thousand times a
        # pass.
        for name, _inode in functions if isinstance(functions, tuple) else ():
            parts.append(self._function(base + name))
        return tuple(parts)

    def _function(self, path):
        try:
            if self._files:
                with os.scandir(path) as scan:
                    names, extra = self._entries_and_files(scan)
            else:
                # NOTE(fingerprint): binding a driver makes a new driver
                # link under the same name; the other entries that matter
                # come and go with their names.
                names = os.listdir(path)
                extra = [sysfs.readlink(path + '/driver')
                         if 'driver' in names else None]
        except OSError as exc:
            return exc.errno
        values = []
        if self._patterns:
            present = set(names)
            for first, magic, parts in self._patterns:
                if magic or first in present:
                    values.extend((p, sysfs.read_value(p))
                                  for p in _expand(path, parts))
        return (tuple(names), tuple(extra), tuple(values))

    def _entries_and_files(self, scan):
        names, extra = [], []
        for entry in scan:
            name = entry.name
            names.append(name)
            if entry.is_symlink():
                if name in FINGERPRINT_LINKS or name.startswith('virtfn'):
                    extra.append((name, sysfs.readlink(entry.path)))
            elif entry.is_file(follow_symlinks=False):
                extra.append(self._stat(entry))
            else:
                extra.append((name, entry.inode()))
        return names, extra

    def _stat(self, entry):
        try:
            found = entry.stat(follow_symlinks=False)
        except OSError as exc:
            return (entry.name, exc.errno)
        if found.st_mtime_ns >= self._since:
            self.racy = True
        return (entry.name, found.st_ino, found.st_mtime_ns, found.st_size)


def _expand(path, parts):
    """The paths below ``path`` that glob components ``parts`` match."""
    paths = [path]
    for part in parts:
        if not _MAGIC.search(part):
            paths = [p + '/' + part for p in paths]
            continue
        matched = []
        for parent in paths:
            names = sorted(sysfs.listdir(parent))
            if part != '*':
                names = fnmatch.filter(names, part)
            matched.extend(parent + '/' + name for name in names
                           if not name.startswith('.'))
        paths = matched
    return paths


def _entries(path):
    """``((name, inode), ...)`` of a directory; the errno (an int) of why
    it cannot be listed."""
    try:
        with os.scandir(path) as scan:
            return tuple((entry.name, entry.inode()) for entry in scan)
    except OSError as exc:
        return exc.errno


