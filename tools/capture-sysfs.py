#!/usr/bin/env python3
"""Copies what Cyborg's drivers read of some PCI functions into a fixture.

Usage: tools/capture-sysfs.py [--sysfs-root /sys] [--subdir NAME]
       OUTPUT ADDRESS [ADDRESS...]

For each PCI address (0000:3b:00.0, or 3b:00.0 in domain 0000) it copies,
below OUTPUT and at the same paths as under the sysfs root:

* the function's directory: its small attribute files (vendor, device,
  class, subsystem_*, revision, numa_node, sriov_*, driver_override...),
  the first 64 bytes of config, and the subdirectories drivers read
  (mdev_supported_types and the mdevs its types list, qat, fpga,
  fpga_region, the files of each net/ interface, and each --subdir);
  never resource*, rom, vpd or the write-only remove, rescan and reset;
* the whole card: every function of the address's slot (an Alveo's
  management and user functions, a GPU's audio function), and the whole
  SR-IOV family (a PF's VFs; a VF's PF, its slot and its VFs);
* its links (driver, iommu_group, physfn, virtfn*, subsystem), rewritten
  relative within OUTPUT, with what they point to: bus/pci/drivers/<name>
  and the kernel's module/<name> when loaded, kernel/iommu_groups/<N>;
* bus/pci/devices/<address>, and the class/* and bus/*/devices entries
  (fpga, fpga_region, mdev_bus, dfl...) that point into what was copied.

It only reads the sysfs tree. A write-only file (an mdev type's create) is
written empty, as the fixture builder does; what cannot be read, and each
link left out, is listed in OUTPUT/CAPTURE-NOTES instead of failing. The
output directory must be new or empty. Only the Python standard library
is used, so the script can be copied alone onto the host to capture.
"""

import argparse
import datetime
import errno
import os
import re
import stat
import sys

_ADDRESS = re.compile(r'^(?:([0-9a-f]{4}):)?([0-9a-f]{2}):([0-9a-f]{2})\.'
                      r'([0-7])$')
_UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}$')
#: Subdirectories of a function that drivers read, copied whole.
SUBDIRS = ('mdev_supported_types', 'qat', 'fpga', 'fpga_region')
#: Subdirectories whose entries' own files only are copied.
SHALLOW = ('net',)
#: Files never copied: huge, binary, slow to read or with side effects.
SKIPPED = re.compile(r'^(resource\d*(_wc)?|rom|vpd|remove|rescan|reset|'
                     r'reset_method|label)$')
LINKS = ('driver', 'iommu_group', 'physfn', 'subsystem')
CONFIG_BYTES = 64
PAGE = 4096
MAX_DEPTH = 8


class Capture:
    """One capture: the source tree, the output tree and the notes."""

    def __init__(self, source, output, subdirs=()):
        self.source = os.path.realpath(source)
        self.output = os.path.realpath(output)
        self.subdirs = SUBDIRS + tuple(subdirs)
        self.notes = []
        self.copied = set()
        #: Links met while copying, recreated once everything is copied.
        self.pending_links = []

    # --- Paths. -----------------------------------------------------------

    def src(self, rel):
        return os.path.join(self.source, rel)

    def dst(self, rel):
        path = os.path.normpath(os.path.join(self.output, rel))
        # NOTE(capture): every write goes through here; nothing may land
        # outside the output tree, let alone in the source.
        if not path.startswith(self.output + os.sep):
            raise ValueError('%s is outside %s' % (path, self.output))
        return path

    def rel_of(self, real):
        """``real`` (a resolved source path) relative to the source root,
        or None when it lies outside."""
        if real == self.source or not real.startswith(self.source + os.sep):
            return None
        return os.path.relpath(real, self.source)

    def note(self, rel, reason):
        self.notes.append('%s: %s' % (rel, reason))

    # --- Writing. ---------------------------------------------------------

    def mkdir(self, rel):
        os.makedirs(self.dst(rel), exist_ok=True)

    def write(self, rel, data):
        path = self.dst(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as out:
            out.write(data)

    def link(self, rel, target_rel):
        """A link at ``rel`` to ``target_rel``, both relative to the root.
        """
        path = self.dst(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            return
        os.symlink(os.path.relpath(self.dst(target_rel),
                                   os.path.dirname(path)), path)

    # --- Reading. ---------------------------------------------------------

    def copy_file(self, rel, limit=PAGE):
        """Copy one regular file; a note when it cannot be read."""
        try:
            mode = os.lstat(self.src(rel)).st_mode
        except OSError as exc:
            self.note(rel, exc.strerror)
            return
        if not stat.S_ISREG(mode):
            self.note(rel, 'not a regular file; left out')
            return
        if not mode & 0o444:
            # NOTE(capture): write-only in the kernel (an mdev type's
            # create); drivers test that it is there, and tests read
            # what was written to it.
            self.write(rel, b'')
            return
        try:
            fd = os.open(self.src(rel), os.O_RDONLY | os.O_NONBLOCK)
            try:
                data = os.read(fd, limit + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            self.note(rel, 'unreadable: %s' % (exc.strerror or exc))
            return
        if len(data) > limit:
            if limit == CONFIG_BYTES:
                data = data[:limit]
            else:
                self.note(rel, 'larger than %d bytes; left out' % limit)
                return
        self.write(rel, data)

    def copy_tree(self, rel, depth=0, shallow=False):
        """Copy a directory: files, subdirectories, links that stay in."""
        self.mkdir(rel)
        try:
            entries = sorted(os.scandir(self.src(rel)),
                             key=lambda entry: entry.name)
        except OSError as exc:
            self.note(rel, 'unreadable directory: %s' % exc.strerror)
            return
        for entry in entries:
            child = os.path.join(rel, entry.name)
            if entry.is_symlink():
                if not shallow:
                    self.pending_links.append(child)
            elif entry.is_dir(follow_symlinks=False):
                if depth >= MAX_DEPTH:
                    self.note(child, 'deeper than %d levels; left out'
                              % MAX_DEPTH)
                elif not shallow:
                    self.copy_tree(child, depth + 1)
            else:
                self.copy_file(child)

    # --- PCI functions. ---------------------------------------------------

    def function_dir(self, address):
        """The function's directory relative to the root, or None."""
        link = self.src(os.path.join('bus', 'pci', 'devices', address))
        rel = self.rel_of(os.path.realpath(link))
        if rel is None or not os.path.isdir(self.src(rel)):
            return None
        return rel

    def family(self, address):
        """The card of ``address``: every function of its slot, and the
        PF and every VF of each SR-IOV family among them."""
        rel = self.function_dir(address)
        if rel is None:
            return [address]
        physfn = os.path.join(self.src(rel), 'physfn')
        if os.path.islink(physfn):
            address = os.path.basename(os.path.realpath(physfn))
        slot = address.rsplit('.', 1)[0] + '.'
        found = []
        for fn in sorted(_listdir(self.src('bus/pci/devices'))):
            if not fn.startswith(slot) or fn in found:
                continue
            found.append(fn)
            fn_rel = self.function_dir(fn)
            for name in sorted(_listdir(self.src(fn_rel)) if fn_rel else ()):
                if name.startswith('virtfn') and name[6:].isdigit():
                    vf = os.path.basename(os.path.realpath(
                        os.path.join(self.src(fn_rel), name)))
                    if vf not in found:
                        found.append(vf)
        return found or [address]

    def capture_function(self, address):
        rel = self.function_dir(address)
        if rel is None:
            self.note(os.path.join('bus', 'pci', 'devices', address),
                      'no such PCI function')
            return
        self.copied.add(rel)
        self.link(os.path.join('bus', 'pci', 'devices', address), rel)
        self.mkdir(rel)
        for entry in sorted(os.scandir(self.src(rel)),
                            key=lambda entry: entry.name):
            child = os.path.join(rel, entry.name)
            if entry.is_symlink():
                if entry.name in LINKS or entry.name.startswith('virtfn'):
                    self.pending_links.append(child)
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in self.subdirs or _UUID.match(entry.name):
                    self.copy_tree(child)
                elif entry.name in SHALLOW:
                    self.copy_net(child)
            elif entry.name == 'config':
                self.copy_file(child, CONFIG_BYTES)
            elif not SKIPPED.match(entry.name):
                self.copy_file(child)
        for mdev in self.mdevs(rel):
            if not _UUID.match(os.path.basename(mdev)):
                self.copy_tree(mdev)

    def mdevs(self, rel):
        """The mediated devices of a parent, found through its types."""
        types = os.path.join(rel, 'mdev_supported_types')
        found = set()
        for type_id in _listdir(self.src(types)):
            devices = os.path.join(types, type_id, 'devices')
            for name in _listdir(self.src(devices)):
                target = self.rel_of(os.path.realpath(
                    self.src(os.path.join(devices, name))))
                if target and os.path.dirname(target) == rel and \
                        os.path.isdir(self.src(target)):
                    found.add(target)
        return sorted(found)

    def copy_net(self, rel):
        for name in sorted(os.listdir(self.src(rel))):
            self.copy_tree(os.path.join(rel, name), shallow=True)

    # --- Links. -----------------------------------------------------------

    def resolve_links(self):
        """Recreate each pending link whose target was, or can be, copied.
        """
        for rel in self.pending_links:
            target = os.path.realpath(self.src(rel))
            target_rel = self.rel_of(target)
            name = os.path.basename(rel)
            if target_rel is None:
                self.note(rel, 'links outside the sysfs root; left out')
            elif self._inside_copy(target_rel):
                self.link(rel, target_rel)
            elif name == 'subsystem' and target_rel == 'bus/pci':
                self.mkdir(target_rel)
                self.link(rel, target_rel)
            elif name == 'driver' and target_rel.startswith('bus/'):
                self.capture_driver(rel, target_rel)
            elif name == 'iommu_group':
                self.capture_group(rel, target_rel)
            else:
                self.note(rel, 'links to %s, which is not captured; left '
                               'out' % target_rel)

    def _inside_copy(self, rel):
        return any(rel == top or rel.startswith(top + os.sep)
                   for top in self.copied) and os.path.lexists(self.dst(rel))

    def capture_driver(self, rel, driver_rel):
        self.mkdir(driver_rel)
        self.link(rel, driver_rel)
        device = os.path.dirname(rel)
        self.link(os.path.join(driver_rel, os.path.basename(device)), device)
        module = os.path.join(driver_rel, 'module')
        if os.path.islink(self.src(module)):
            module_rel = self.rel_of(os.path.realpath(self.src(module)))
        else:
            # NOTE(capture): a driver built into a module of its own name
            # shows no module link on every kernel; sysfs spells module
            # names with underscores.
            module_rel = os.path.join('module', os.path.basename(
                driver_rel).replace('-', '_'))
        if module_rel and os.path.isdir(self.src(module_rel)):
            self.capture_module(module_rel)
            if os.path.islink(self.src(module)):
                self.link(module, module_rel)

    def capture_module(self, rel):
        if rel in self.copied:
            return
        self.copied.add(rel)
        self.mkdir(rel)
        for entry in sorted(os.scandir(self.src(rel)),
                            key=lambda entry: entry.name):
            if entry.is_file(follow_symlinks=False):
                self.copy_file(os.path.join(rel, entry.name))

    def capture_group(self, rel, group_rel):
        self.mkdir(os.path.join(group_rel, 'devices'))
        self.link(rel, group_rel)
        device = os.path.dirname(rel)
        self.link(os.path.join(group_rel, 'devices',
                               os.path.basename(device)), device)
        if os.path.isfile(self.src(os.path.join(group_rel, 'type'))):
            self.copy_file(os.path.join(group_rel, 'type'))

    def capture_entries_into_copy(self):
        """class/*/* and bus/*/devices/* links that point into the copy."""
        tops = [os.path.join('class', name)
                for name in _listdir(self.src('class'))]
        tops += [os.path.join('bus', name, 'devices')
                 for name in _listdir(self.src('bus')) if name != 'pci']
        for top in sorted(tops):
            for name in sorted(_listdir(self.src(top))):
                rel = os.path.join(top, name)
                if not os.path.islink(self.src(rel)):
                    continue
                target = self.rel_of(os.path.realpath(self.src(rel)))
                if target is not None and self._inside_copy(target):
                    self.link(rel, target)

    def run(self, addresses):
        """Capture the functions (and their families); their addresses.
        """
        todo = []
        for address in addresses:
            todo += [a for a in self.family(address) if a not in todo]
        for address in todo:
            self.capture_function(address)
        self.resolve_links()
        self.capture_entries_into_copy()
        self.write_notes(addresses, todo)
        return todo

    def write_notes(self, asked, captured):
        lines = ['# Captured by tools/capture-sysfs.py on %s' %
                 datetime.datetime.now(datetime.timezone.utc).strftime(
                     '%Y-%m-%d %H:%M UTC'),
                 '# from %s: %s' % (self.source, ' '.join(asked)),
                 '# functions: %s' % ' '.join(captured),
                 '# Entries left out or unreadable, one a line:']
        self.write('CAPTURE-NOTES', ('\n'.join(lines + sorted(self.notes))
                                     + '\n').encode())


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def normalize(text):
    """'0000:3b:00.0' from '3B:00.0' or '0000:3b:00.0'; ValueError else."""
    match = _ADDRESS.match(text.strip().lower())
    if match is None:
        raise ValueError('%r is not a PCI address' % text)
    domain, bus, slot, function = match.groups()
    return '%s:%s:%s.%s' % (domain or '0000', bus, slot, function)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog='Turn the output into a committed fixture as '
               'doc/source/contributor/drivers.rst describes.')
    parser.add_argument('--sysfs-root', default='/sys')
    parser.add_argument('--subdir', action='append', default=[],
                        help='another subdirectory of a function to copy '
                             'whole (repeatable)')
    parser.add_argument('output')
    parser.add_argument('addresses', nargs='+', metavar='address')
    args = parser.parse_args(argv)
    try:
        addresses = [normalize(a) for a in args.addresses]
    except ValueError as exc:
        parser.error(str(exc))
    source = os.path.realpath(args.sysfs_root)
    output = os.path.realpath(args.output)
    if not os.path.isdir(os.path.join(source, 'bus', 'pci', 'devices')):
        parser.error('%s has no bus/pci/devices' % args.sysfs_root)
    if output == source or output.startswith(source + os.sep) or \
            source.startswith(output + os.sep):
        parser.error('the output must lie outside the sysfs root')
    if os.path.exists(output) and os.listdir(output):
        parser.error('%s is not empty' % args.output)
    os.makedirs(output, exist_ok=True)
    capture = Capture(source, output, args.subdir)
    captured = capture.run(addresses)
    print('Captured %d PCI functions (%s) into %s; %d notes in %s' % (
        len(captured), ' '.join(captured), output, len(capture.notes),
        os.path.join(output, 'CAPTURE-NOTES')))
    missing = [a for a in addresses if capture.function_dir(a) is None]
    return errno.ENOENT if missing else 0


if __name__ == '__main__':
    sys.exit(main())
