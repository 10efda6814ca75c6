"""Helpers the hardware drivers share: per-device isolation, VFs, tools."""

import os
import subprocess

from oslo_concurrency import processutils
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import sysfs
from cyborg.privsep import sysfs as priv_sysfs

LOG = logging.getLogger(__name__)


def build_each(driver, items, build):
    """``build(item)`` for every item, leaving out the ones that fail.

    ``build`` returns a ``report.Device`` or None (nothing to report). A
    device whose sysfs entries are missing or malformed raises
    ``sysfs.MalformedEntry``; it is skipped with one log line so that one
    broken card never hides the others.
    """
    devices = []
    for item in items:
        try:
            device = build(item)
        except sysfs.MalformedEntry as exc:
            LOG.warning('%s: skipping %s: %s', driver, item, exc)
            continue
        if device is not None:
            devices.append(device)
    return devices


def virtual_functions(fn):
    """The SR-IOV VFs of the PF ``fn``, in virtfn order.

    A ``virtfn<N>`` link that is dangling, or names a function whose
    identity does not read or that does not name ``fn`` as its PF, loses
    that VF only: it is recorded as a defect of ``fn``.
    """
    found = []
    for entry, address in fn.virtfn_links:
        vf = fn.sysfs.pci_function(address)
        if vf is None:
            fn.defect('links to %s, which is no readable PCI function'
                      % address, entry)
        elif vf.physfn != fn.address:
            fn.defect('links to %s, which is not a VF of this function'
                      % address, entry)
        else:
            found.append(vf)
    return found


def physical_function(fn):
    """The PF of the VF ``fn``, or None (a defect of ``fn``) when its
    ``physfn`` link names no readable function."""
    if fn.physfn is None:
        return None
    pf = fn.sysfs.pci_function(fn.physfn)
    if pf is None:
        fn.defect('links to %s, which is no readable PCI function'
                  % fn.physfn, 'physfn')
    return pf


def control_address(device):
    """The PCI address (text) of the function controlling ``device``."""
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % (
        device.controlpath.cpid_info)


def _judged_address(tree, address):
    """The function whose config space tells whether ``address`` answers.

    :raises sysfs.MalformedEntry: a VF's ``physfn`` link names no PCI
        address.
    """
    try:
        physfn = os.readlink(tree.path('bus', 'pci', 'devices', address,
                                       'physfn'))
    except OSError:
        return address
    # NOTE(tools): the SR-IOV spec has a VF's vendor and device ids read
    # all ones in its own config space, so only its PF can tell whether
    # the card still answers.
    return str(sysfs.PciAddress.parse(os.path.basename(physfn)))


def pci_health(device):
    """Whether the PCI function controlling ``device`` still answers.

    A card that fell off the bus reads all ones: its ``vendor`` shows
    0xffff or its config space reads 0xffff or cannot be read at all.
    An SR-IOV VF is judged by its PF while sysfs still lists the VF.
    """
    tree = sysfs.Sysfs()
    address = _judged_address(tree, control_address(device))
    fn_dir = tree.path('bus', 'pci', 'devices', address)
    vendor = tree.read('bus', 'pci', 'devices', address, 'vendor')
    if vendor is None:
        return base.Health(False, 'PCI function %s is gone from sysfs'
                           % address)
    if vendor.lower() == '0xffff':
        return base.Health(False, '%s fell off the bus (vendor reads '
                           '0xffff)' % address)
    try:
        with open(os.path.join(fn_dir, 'config'), 'rb') as config:
            head = config.read(2)
    except OSError as exc:
        return base.Health(False, 'config space of %s is unreadable: %s'
                           % (address, exc.strerror or exc))
    if len(head) < 2 or head == b'\xff\xff':
        return base.Health(False, 'config space of %s reads no vendor'
                           % address)
    return base.HEALTHY


def run(driver, cmd, timeout, inputs=()):
    """Run the vendor tool ``cmd`` as root; return its (stdout, stderr).

    :param driver: the driver name the ``DriverError`` names.
    :param timeout: seconds the tool may run.
    :param inputs: files the tool reads; a missing one fails before the
        tool starts, so the error names the file rather than the tool's
        own wording.
    :raises exception.DriverError: the tool is missing, fails, or runs
        out of time; the reason carries the tool's stderr.
    """
    for path in inputs:
        if not os.path.isfile(path):
            raise exception.DriverError(driver=driver,
                                        reason='no such file: %s' % path)
    tool = os.path.basename(cmd[0])
    try:
        return priv_sysfs.execute(*cmd, timeout=timeout)
    except processutils.ProcessExecutionError as exc:
        # NOTE(tools): through the privsep daemon the error comes back
        # rebuilt from its message only, so stderr may sit in str(exc).
        detail = (exc.stderr or '').strip() or ' '.join(str(exc).split())
        if exc.exit_code is None:
            reason = '%s failed: %s' % (tool, detail)
        else:
            reason = '%s exited with %s: %s' % (tool, exc.exit_code, detail)
    except subprocess.TimeoutExpired:
        reason = '%s did not finish within %s seconds' % (tool, timeout)
    except OSError as exc:
        reason = 'cannot run %s: %s' % (cmd[0], exc.strerror or exc)
    LOG.error('%s: %s', driver, reason)
    raise exception.DriverError(driver=driver, reason=reason)
