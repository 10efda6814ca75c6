"""The sysfs health checks the drivers share, read as the kernel ABI says."""

# NOTE(health): each check reads a few files of the PCI function that
# controls a device (Linux Documentation/ABI/testing/):
# * sysfs-bus-pci-devices-aer: aer_dev_{correctable,nonfatal,fatal} list
#   "<error name> <count>" lines and end with TOTAL_ERR_COR,
#   TOTAL_ERR_NONFATAL or TOTAL_ERR_FATAL "<count>", counted since the
#   kernel found the function;
# * drivers/pci/pci-sysfs.c: current_link_speed / max_link_speed read
#   "8.0 GT/s PCIe" ("Unknown" when the link state does not say),
#   current_link_width / max_link_width a lane count;
# * sysfs-class-hwmon: hwmon/hwmonN/temp<i>_input, _max and _crit, in
#   millidegrees Celsius; a limit is reached "at or above" it;
# * sysfs-driver-qat: qat/state reads "up" or "down";
# * sysfs-platform-dfl-fme: dfl-fme.N/errors/{fme,pcie0,pcie1,nonfatal,
#   catfatal}_errors read "0x<hex>", non-zero when the hardware logged an
#   error; catfatal_errors are the catastrophic and fatal ones.
# A file that is absent means the check does not apply to the device; one
# that is there but unreadable or malformed is logged once and costs only
# its own check. The checks read no clock and keep nothing between
# passes, so an unchanged device gives an equal Health on every pass.

import os
import re

from oslo_config import cfg

from cyborg.drivers import base
from cyborg.drivers import sysfs

CONF = cfg.CONF

#: The longest reason a Health carries (the database column's size).
MAX_REASON = 255

_RANK = {base.OK: 0, base.UNKNOWN: 1, base.DEGRADED: 2, base.FAILED: 3}
_TEMP_INPUT = re.compile(r'^temp(\d+)_input$')
_HWMON = re.compile(r'^hwmon\d+$')
_SPEED = re.compile(r'^(\d+(?:\.\d+)?)\s*GT/s')
_DFL_REGION = re.compile(r'^region\d+$')
_DFL_FME = re.compile(r'^dfl-fme\.\d+$')
#: DFL FME error files: name -> state when non-zero.
DFL_ERRORS = (('catfatal_errors', base.FAILED),
              ('nonfatal_errors', base.DEGRADED),
              ('fme_errors', base.DEGRADED),
              ('pcie0_errors', base.DEGRADED),
              ('pcie1_errors', base.DEGRADED))
#: AER files, the name of their total line, and how they are judged.
AER_FILES = (('aer_dev_fatal', 'TOTAL_ERR_FATAL', 'fatal'),
             ('aer_dev_nonfatal', 'TOTAL_ERR_NONFATAL', 'non-fatal'),
             ('aer_dev_correctable', 'TOTAL_ERR_COR', 'corrected'))


class Findings:
    """What the checks of one device found; ``result()`` is its Health."""

    def __init__(self):
        self._found = []
        self._sources = []
        self._unreadable = []

    def ran(self, source: str) -> None:
        """Record that the check ``source`` could read what it needs."""
        if source not in self._sources:
            self._sources.append(source)

    def found(self, state: str, source: str, text: str) -> None:
        """Record a finding of the check ``source``."""
        self.ran(source)
        self._found.append((-_RANK[state], len(self._found), state, text))

    def errored(self, source: str, text: str) -> None:
        """Record that the check ``source`` broke inside Cyborg (not on
        the hardware): unknown, unless another finding is worse."""
        self._found.append((-_RANK[base.UNKNOWN], len(self._found),
                            base.UNKNOWN, text))

    def unreadable(self, path: str, why: str) -> None:
        """Record (and log once) a file a check could not read."""
        self._unreadable.append(os.path.basename(path))
        # NOTE(health): defects name paths as they read under /sys.
        root = CONF.agent.sysfs_root
        if root and path.startswith(root.rstrip(os.sep) + os.sep):
            path = os.path.relpath(path, root)
        sysfs.log_once(sysfs.Defect(path, why), 'device health check')

    @property
    def state(self) -> str:
        """The worst state found so far (``OK`` when nothing was)."""
        if self._found:
            return min(self._found)[2]
        if not self._sources and self._unreadable:
            return base.UNKNOWN
        return base.OK

    def result(self) -> base.Health:
        """The worst state wins; the reason lists the findings, worst
        first, on one line of at most ``MAX_REASON`` characters."""
        state = self.state
        if self._found:
            reason = '; '.join(text for *_key, text in sorted(self._found))
        elif state == base.UNKNOWN:
            reason = 'no health check could read its files: %s' % ', '.join(
                dict.fromkeys(self._unreadable))
        else:
            reason = None
        return base.Health(state, one_line(reason), tuple(self._sources))


def one_line(text: str | None) -> str | None:
    """``text`` on one line of at most ``MAX_REASON`` characters."""
    if text is None:
        return None
    text = ' '.join(text.split())
    if len(text) <= MAX_REASON:
        return text
    return text[:MAX_REASON - 3] + '...'


def read_text(path: str, findings: Findings) -> str | None:
    """The stripped text of ``path``; None when absent (the check does
    not apply) or unreadable (recorded)."""
    text = sysfs.read_value(path)
    if text is None and os.path.lexists(path):
        findings.unreadable(path, 'unreadable')
    return text


def read_int(path: str, findings: Findings, base_: int = 10) -> int | None:
    """``read_text`` as an integer; None (recorded) when malformed."""
    text = read_text(path, findings)
    if text is None:
        return None
    try:
        return int(text, base_)
    except ValueError:
        findings.unreadable(path, 'not a number: %r' % text[:40])
        return None


def aer_total(text: str, total_name: str) -> int:
    """The count of the ``total_name`` line of an AER counter file.

    :raises ValueError: no such line, or its count is not a number.
    """
    for line in text.splitlines():
        name, _sep, count = line.strip().rpartition(' ')
        if name.strip() == total_name:
            return int(count)
    raise ValueError('no %s line' % total_name)


def aer_totals(fn_dir: str, findings: Findings) -> dict[str, int]:
    """``{'fatal': n, 'non-fatal': n, 'corrected': n}`` of the files that
    read; a function without AER has none of them."""
    totals = {}
    for name, total_name, kind in AER_FILES:
        path = os.path.join(fn_dir, name)
        text = read_text(path, findings)
        if text is None:
            continue
        try:
            totals[kind] = aer_total(text, total_name)
        except ValueError as exc:
            findings.unreadable(path, str(exc))
    return totals


def check_aer(fn_dir: str, findings: Findings) -> None:
    """Fatal errors fail the device, non-fatal ones degrade it, corrected
    ones degrade it from ``[health] aer_correctable_threshold``."""
    totals = aer_totals(fn_dir, findings)
    if not totals:
        return
    findings.ran('aer')
    if totals.get('fatal'):
        findings.found(base.FAILED, 'aer', 'AER fatal errors: %d'
                       % totals['fatal'])
    if totals.get('non-fatal'):
        findings.found(base.DEGRADED, 'aer', 'AER non-fatal errors: %d'
                       % totals['non-fatal'])
    threshold = CONF.health.aer_correctable_threshold
    if threshold and totals.get('corrected', 0) >= threshold:
        findings.found(base.DEGRADED, 'aer', 'AER corrected errors: %d'
                       % totals['corrected'])


def parse_speed(text: str) -> float | None:
    """GT/s of a link speed as sysfs shows it ('16.0 GT/s PCIe', older
    kernels '8 GT/s'); None for 'Unknown'."""
    match = _SPEED.match(text)
    return float(match.group(1)) if match else None


def _link_end(fn_dir, findings, prefix):
    speed = read_text(os.path.join(fn_dir, prefix + '_link_speed'), findings)
    width = read_int(os.path.join(fn_dir, prefix + '_link_width'), findings)
    return (None if speed is None else parse_speed(speed)), width


def _upstream_port(fn_dir):
    """The directory of the bridge above the function, or None.

    NOTE(health): the kernel nests a function's directory below the one
    of the port its link goes to; a function straight below
    devices/pci<domain>:<bus> has a root complex, not a port, above it.
    """
    parent = os.path.dirname(os.path.realpath(fn_dir))
    try:
        sysfs.PciAddress.parse(os.path.basename(parent))
    except sysfs.MalformedEntry:
        return None
    return parent


def check_link(fn_dir: str, findings: Findings, speed: bool = True) -> None:
    """Degrade a link trained narrower (or, with ``speed``, slower) than
    both its ends allow: the function's own maximum and the maximum of
    the port above it."""
    current_speed, current_width = _link_end(fn_dir, findings, 'current')
    max_speed, max_width = _link_end(fn_dir, findings, 'max')
    port = _upstream_port(fn_dir)
    if port is not None:
        port_speed, port_width = _link_end(port, findings, 'max')
        if port_speed is not None and max_speed is not None:
            max_speed = min(max_speed, port_speed)
        if port_width and max_width:
            max_width = min(max_width, port_width)
    judged = False
    if current_width is not None and max_width:
        judged = True
        if current_width < max_width:
            findings.found(base.DEGRADED, 'link', 'PCIe link x%d of x%d'
                           % (current_width, max_width))
    if (speed and CONF.health.check_link_speed and current_speed
            and max_speed):
        judged = True
        if current_speed < max_speed:
            findings.found(base.DEGRADED, 'link', 'PCIe link %g GT/s of '
                           '%g GT/s' % (current_speed, max_speed))
    if judged:
        findings.ran('link')


def hwmon_dirs(device_dir: str) -> list[str]:
    """The hwmon/hwmonN directories below a device's directory."""
    top = os.path.join(device_dir, 'hwmon')
    return [os.path.join(top, name) for name in sorted(sysfs.listdir(top))
            if _HWMON.match(name)]


def temperatures(hwmon_dir: str, findings: Findings) -> list[tuple]:
    """``(sensor index, input, max, crit)`` in millidegrees of every
    readable temperature sensor of one hwmon device; limits may be None.
    """
    found = []
    names = sysfs.listdir(hwmon_dir)
    for name in sorted(names):
        match = _TEMP_INPUT.match(name)
        if match is None:
            continue
        index = match.group(1)
        value = read_int(os.path.join(hwmon_dir, name), findings)
        if value is None:
            continue
        limits = []
        for limit in ('max', 'crit'):
            limit_name = 'temp%s_%s' % (index, limit)
            path = os.path.join(hwmon_dir, limit_name)
            limits.append(read_int(path, findings) if limit_name in names
                          else None)
        found.append((int(index), value, *limits))
    return found


def check_hwmon(dirs: list[str], findings: Findings) -> None:
    """Fail a device with a temperature at or above its ``crit`` limit,
    degrade it at or above ``max``.

    NOTE(health): a limit of 0 or below is one the chip did not set.
    """
    for hwmon_dir in dirs:
        for index, value, high, crit in temperatures(hwmon_dir, findings):
            findings.ran('hwmon')
            where = '%s/temp%d' % (os.path.basename(hwmon_dir), index)
            if crit is not None and crit > 0 and value >= crit:
                findings.found(base.FAILED, 'hwmon', '%s %g C at or above '
                               'crit %g C' % (where, value / 1000,
                                              crit / 1000))
            elif high is not None and high > 0 and value >= high:
                findings.found(base.DEGRADED, 'hwmon', '%s %g C at or above '
                               'max %g C' % (where, value / 1000,
                                             high / 1000))


def check_qat(fn_dir: str, findings: Findings) -> None:
    """Fail a QAT PF whose ``qat/state`` is not 'up' (4xxx and later)."""
    state = read_text(os.path.join(fn_dir, 'qat', 'state'), findings)
    if state is None:
        return
    findings.ran('qat')
    if state != 'up':
        findings.found(base.FAILED, 'qat', 'QAT state %s' % (state[:40]
                                                             or 'empty'))


def dfl_fmes(fn_dir: str) -> list[str]:
    """The dfl-fme.N directories of a PCI function on dfl-pci."""
    top = os.path.join(fn_dir, 'fpga_region')
    found = []
    for region in sorted(sysfs.listdir(top)):
        if not _DFL_REGION.match(region):
            continue
        rdir = os.path.join(top, region)
        found += [os.path.join(rdir, name)
                  for name in sorted(sysfs.listdir(rdir))
                  if _DFL_FME.match(name)]
    return found


def check_dfl(fn_dir: str, findings: Findings) -> None:
    """Judge the error registers of each FME: catastrophic or fatal
    errors fail the card, any other logged error degrades it; and the
    temperatures of the FME's own hwmon devices (dfl_fme_thermal)."""
    fmes = dfl_fmes(fn_dir)
    check_hwmon([d for fme in fmes for d in hwmon_dirs(fme)], findings)
    for fme in fmes:
        for name, state in DFL_ERRORS:
            value = read_int(os.path.join(fme, 'errors', name), findings, 16)
            if value is None:
                continue
            findings.ran('dfl')
            if value:
                findings.found(state, 'dfl', '%s %s 0x%x' % (
                    os.path.basename(fme), name, value))


def check_bound(fn_dir: str, address: str, findings: Findings) -> None:
    """Degrade a device whose function must be on a host driver (to
    offer what it does) and is on none."""
    if sysfs.readlink(os.path.join(fn_dir, 'driver')) is None:
        findings.found(base.DEGRADED, 'pci', '%s is bound to no driver'
                       % address)


def control_address(device) -> str:
    """The PCI address (text) of the function controlling ``device``."""
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % (
        device.controlpath.cpid_info)


def _judged_address(tree, address):
    """The function whose config space tells whether ``address`` answers.

    :raises sysfs.MalformedEntry: a VF's ``physfn`` link names no PCI
        address.
    """
    physfn = sysfs.readlink(tree.path('bus', 'pci', 'devices', address,
                                      'physfn'))
    if physfn is None:
        return address
    # NOTE(health): the SR-IOV spec has a VF's vendor and device ids read
    # all ones in its own config space, so only its PF can tell whether
    # the card still answers.
    return str(sysfs.PciAddress.parse(os.path.basename(physfn)))


def check_answers(tree: sysfs.Sysfs, address: str,
                  findings: Findings) -> bool:
    """Whether the function at ``address`` still answers; a failure when
    it does not.

    A card that fell off the bus reads all ones: its ``vendor`` shows
    0xffff or its config space reads 0xffff or cannot be read at all.
    An SR-IOV VF is judged by its PF while sysfs still lists the VF.
    """
    address = _judged_address(tree, address)
    fn_dir = tree.path('bus', 'pci', 'devices', address)
    vendor = sysfs.read_value(os.path.join(fn_dir, 'vendor'))
    if vendor is None:
        findings.found(base.FAILED, 'pci', 'PCI function %s is gone from '
                       'sysfs' % address)
        return False
    if vendor.lower() == '0xffff':
        findings.found(base.FAILED, 'pci', '%s fell off the bus (vendor '
                       'reads 0xffff)' % address)
        return False
    try:
        with open(os.path.join(fn_dir, 'config'), 'rb') as config:
            head = config.read(2)
    except OSError as exc:
        findings.found(base.FAILED, 'pci', 'config space of %s is '
                       'unreadable: %s' % (address, exc.strerror or exc))
        return False
    if len(head) < 2 or head == b'\xff\xff':
        findings.found(base.FAILED, 'pci', 'config space of %s reads no '
                       'vendor' % address)
        return False
    findings.ran('pci')
    return True


def function_dir(address: str, tree: sysfs.Sysfs | None = None) -> str:
    """The sysfs directory of the function at ``address``."""
    tree = tree or sysfs.Sysfs()
    return tree.path('bus', 'pci', 'devices', address)


def check_device(device, *, needs_driver: bool = False,
                 link_speed: bool = True, extra: tuple = ()) -> base.Health:
    """The Health of a PCI card: the function answers, then its AER
    counters, its link, its hwmon temperatures and ``extra`` checks.

    :param device: the ``report.Device``; its control path names the
        function that is judged.
    :param needs_driver: the function must be on a host driver.
    :param link_speed: judge the link's speed, not only its width.
    :param extra: ``check(fn_dir, findings)`` callables of the driver
        (``check_qat``, ``check_dfl``, an NVML check...).
    """
    findings = Findings()
    tree = sysfs.Sysfs()
    address = control_address(device)
    if not check_answers(tree, address, findings):
        return findings.result()
    fn_dir = function_dir(address, tree)
    if needs_driver:
        check_bound(fn_dir, address, findings)
    check_aer(fn_dir, findings)
    check_link(fn_dir, findings, speed=link_speed)
    check_hwmon(hwmon_dirs(fn_dir), findings)
    for check in extra:
        check(fn_dir, findings)
    return findings.result()
