"""Damages committed sysfs trees at random and checks what discovery says."""

# NOTE(fuzz): the unit suite runs a fixed seed, the functional suite a longer
# random run (the seed is printed, so a failure can be replayed). A round
# copies one committed tree, damages a few of its files, links and
# directories the way real hosts break (deleted, truncated, garbled,
# unreadable, dangling or looping links), runs every hardware driver at once
# and asserts:
# - discovery never raises, and no driver fails the pass;
# - nothing is reported of a PCI function that does not exist, or whose
#   identity (vendor, device, class) does not read;
# - no function is claimed twice, by two drivers or by two devices;
# - a device whose own identity files are intact is still reported.

import builtins
import contextlib
import dataclasses
import errno
import os
import random
import shutil
import stat

from cyborg.agent import resource_tracker
from cyborg.drivers import sysfs
from cyborg.tests.fixtures import pci_hosts

#: Every hardware driver, the generic PCI one claiming whatever the others
#: leave (so that it reads every function too).
DRIVERS = ['nvidia_gpu_driver', 'intel_fpga_driver', 'xilinx_fpga_driver',
           'intel_qat_driver', 'huawei_ascend_driver', 'pci_driver']
EVERYTHING = '{"vendor_id": "*", "product_id": "*"}'
DAMAGE = ('delete', 'truncate', 'garble', 'binary', 'unreadable', 'dangle',
          'loop', 'directory')
IDENTITY_FILES = ('vendor', 'device', 'class')
_PCI = ('PCI', 'MDEV')


def hosts():
    """The names of the committed trees."""
    return sorted(name for name in os.listdir(pci_hosts.SYSFS_DIR)
                  if os.path.isdir(os.path.join(pci_hosts.SYSFS_DIR, name)))


def _entries(root):
    """Files, links and directories a damage may hit, in a stable order."""
    found = []
    for top in ('devices', 'class', 'bus'):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            links = [d for d in dirnames
                     if os.path.islink(os.path.join(dirpath, d))]
            found.extend(os.path.join(dirpath, name)
                         for name in sorted(filenames + links))
            found.extend(os.path.join(dirpath, d) for d in dirnames
                         if d not in links)
    return found


@dataclasses.dataclass
class Damage:
    """One damage done to a tree: the path (relative) and how."""

    path: str
    how: str

    def __str__(self):
        return '%s %s' % (self.how, self.path)


class Unreadable:
    """Paths the test process may not read, even as root.

    NOTE(fuzz): root ignores ``chmod 000``, and the tests run as root in
    CI; so besides the mode bits, opening, listing or following one of
    these paths raises EACCES, as it would for the agent's user.
    """

    def __init__(self):
        self.paths = set()

    def denied(self, path):
        try:
            path = os.fspath(path)
        except TypeError:
            return False
        if not isinstance(path, str):
            return False
        path = os.path.abspath(path)
        return any(path == p or path.startswith(p + os.sep)
                   for p in self.paths)

    @contextlib.contextmanager
    def enforced(self):
        real = {'open': builtins.open, 'listdir': os.listdir,
                'readlink': os.readlink, 'scandir': os.scandir}

        def guard(name):
            def call(path, *args, **kwargs):
                if self.denied(path):
                    raise PermissionError(errno.EACCES, 'Permission denied',
                                          os.fspath(path))
                return real[name](path, *args, **kwargs)
            return call

        builtins.open = guard('open')
        os.listdir, os.readlink, os.scandir = (
            guard('listdir'), guard('readlink'), guard('scandir'))
        try:
            yield
        finally:
            builtins.open = real['open']
            os.listdir, os.readlink, os.scandir = (
                real['listdir'], real['readlink'], real['scandir'])


def damage(root, rng, count, unreadable):
    """Damage ``count`` entries of the tree at ``root``; the Damage list."""
    entries = _entries(root)
    done = []
    for _ in range(count):
        path = entries[rng.randrange(len(entries))]
        if not os.path.lexists(path):
            continue
        how = rng.choice(DAMAGE)
        _apply(path, how, rng, unreadable)
        done.append(Damage(os.path.relpath(path, root), how))
    return done


def _remove(path):
    if os.path.islink(path) or not os.path.isdir(path):
        os.remove(path)
    else:
        shutil.rmtree(path)


def _apply(path, how, rng, unreadable):
    if how == 'unreadable':
        if not os.path.islink(path):
            os.chmod(path, 0)
        unreadable.paths.add(os.path.abspath(path))
        return
    if how == 'truncate' and os.path.isfile(path) and \
            not os.path.islink(path):
        with open(path, 'r+b') as handle:
            handle.truncate(rng.randrange(2))
        return
    _remove(path)
    if how == 'delete':
        return
    if how == 'dangle':
        os.symlink('../../nowhere/%x' % rng.getrandbits(32), path)
    elif how == 'loop':
        os.symlink(os.path.basename(path), path)
    elif how == 'directory':
        os.makedirs(path)
    else:
        data = (b'%x\n' % rng.getrandbits(64) if how == 'garble' else
                bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 24))))
        with open(path, 'wb') as out:
            out.write(data)


def _restore_modes(root):
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)


def _vgpu_types(root):
    types = set()
    for dirpath, dirnames, _files in os.walk(os.path.join(root, 'devices')):
        if os.path.basename(dirpath) == 'mdev_supported_types':
            types.update(dirnames)
    return sorted(types)


def configure(override, root):
    """Options of the fuzz's agent for the tree at ``root``."""
    override('sysfs_root', str(root), group='agent')
    override('device_spec', [EVERYTHING], group='pci')
    override('enabled_vgpu_types', _vgpu_types(root), group='gpu_devices')


def discover(root):
    """``(HostReport, failed)`` of every driver over the tree at ``root``."""
    tracker = resource_tracker.ResourceTracker('fuzz', DRIVERS)
    return tracker.discover()


def _address(info):
    return sysfs.PciAddress(info['domain'], info['bus'], info['device'],
                            info['function'])


def claimed(host_report):
    """{PciAddress: [device control address]} of every function reported."""
    found = {}
    for device in host_report.devices:
        control = _address(device.controlpath.cpid_info)
        for dep in device.deployables:
            for handle in dep.attach_handles:
                if handle.attach_type not in _PCI:
                    continue
                address = _address(handle.attach_info)
                owners = found.setdefault(address, [])
                if control not in owners:
                    owners.append(control)
    return found


def _identity_paths(root, address):
    """The paths (relative to ``root``) a function's identity lies on: its
    bus/pci/devices link and its real directory, and below each the
    vendor, device and class files."""
    link = os.path.join('bus', 'pci', 'devices', str(address))
    real = os.path.relpath(os.path.realpath(os.path.join(root, link)), root)
    return [link, real]


def identity_intact(root, address, damages):
    """Whether no damage touched the identity of the function at
    ``address`` in the undamaged tree at ``root``: its link or directory,
    a directory above them, or its vendor, device and class files."""
    for base in _identity_paths(root, address):
        for hit in damages:
            if base == hit.path or base.startswith(hit.path + os.sep):
                return False
            if hit.path.startswith(base + os.sep):
                rest = hit.path[len(base) + 1:].split(os.sep)
                if rest[0] in IDENTITY_FILES:
                    return False
    return True


def check(undamaged, host_report, failed, root, damages, original=None):
    """The assertions of one round; the message says what broke.

    :param original: the undamaged tree ``undamaged`` was found on.
    """
    about = '; '.join(str(d) for d in damages)
    assert failed == [], 'drivers failed (%s): %s' % (about, failed)
    readable = {fn.address for fn in sysfs.Sysfs(str(root)).pci_functions}
    for device in host_report.devices:
        control = _address(device.controlpath.cpid_info)
        assert control in readable, (
            'reported device %s does not exist (%s)' % (control, about))
    owners = claimed(host_report)
    for address, devices in owners.items():
        assert address in readable, (
            'a handle passes %s through, which does not exist (%s)'
            % (address, about))
        assert len(devices) == 1, '%s is claimed by %s (%s)' % (
            address, devices, about)
    reported = {_address(d.controlpath.cpid_info)
                for d in host_report.devices}
    for device in undamaged.devices:
        control = _address(device.controlpath.cpid_info)
        if identity_intact(original or root, control, damages):
            assert control in reported, (
                'device %s was dropped though its identity is intact (%s)'
                % (control, about))


def run(override, workdir, seed, rounds, max_damages=6):
    """``rounds`` rounds over every committed tree; returns the count of
    damages done."""
    rng = random.Random(seed)
    names = hosts()
    undamaged = {}
    for name in names:
        configure(override, pci_hosts.committed(name))
        undamaged[name], failed = discover(pci_hosts.committed(name))
        assert failed == [], (name, failed)
    total = 0
    for number in range(rounds):
        name = names[number % len(names)]
        root = os.path.join(str(workdir), '%s-%d' % (name, number))
        shutil.copytree(pci_hosts.committed(name), root, symlinks=True)
        unreadable = Unreadable()
        damages = damage(root, rng, rng.randrange(1, max_damages + 1),
                         unreadable)
        total += len(damages)
        configure(override, root)
        try:
            with unreadable.enforced():
                host_report, failed = discover(root)
                check(undamaged[name], host_report, failed, root, damages,
                      pci_hosts.committed(name))
        finally:
            _restore_modes(root)
            shutil.rmtree(root)
    return total
