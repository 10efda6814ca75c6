"""Helpers the hardware drivers share: per-device isolation, VFs, tools."""

import os
import subprocess

from oslo_concurrency import processutils
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import health
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
    return health.control_address(device)


def pci_health(device):
    """Whether the PCI function controlling ``device`` still answers.

    The ``pci`` check of ``health.check_device`` alone: gone, fell off
    the bus, config space unreadable. Drivers judge their cards with
    ``health.check_device``, which runs it first.

    :raises sysfs.MalformedEntry: a VF's ``physfn`` link names no PCI
        address.
    """
    findings = health.Findings()
    health.check_answers(sysfs.Sysfs(), control_address(device), findings)
    return findings.result()


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
