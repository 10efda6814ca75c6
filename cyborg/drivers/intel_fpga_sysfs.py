"""Where the two Intel FPGA kernel drivers put a card's FME and ports."""

# NOTE(fpga): both kernel drivers hang a container below the PCI function
# that holds the FPGA Management Engine (FME, on the PF only) and the
# ports, one AFU behind each port:
#
# * upstream DFL (dfl-pci): fpga_region/regionN (an fpga_region class
#   device) holding dfl-fme.N and dfl-port.N platform devices. The AFU id
#   is dfl-port.N/afu_id; the PR interface id is the compat_id of the
#   region the FME's PR sub-feature creates per port,
#   dfl-fme.N/dfl-fme-region.M/fpga_region/regionK/compat_id (the base
#   region's own compat_id reads -ENOENT).
# * OPAE's out-of-tree driver (intel-fpga-pci): fpga/intel-fpga-dev.N (an
#   "fpga" class device) holding intel-fpga-fme.N, whose pr/interface_id
#   is the PR interface id, and intel-fpga-port.N with afu_id.
#
# With SR-IOV, either driver deletes a released port from the PF; a VF
# bound to the same driver shows it in a container of its own. Both print
# the ids as 32 hex digits.

import dataclasses
import os
import re

from cyborg.drivers import sysfs

#: The upstream Device Feature List stack.
DFL = 'dfl'
#: OPAE's out-of-tree intel-fpga stack.
OPAE = 'intel-fpga'
#: Bound kernel driver -> stack.
STACK_OF_DRIVER = {'dfl-pci': DFL, 'intel-fpga-pci': OPAE}

_ID = re.compile(r'^(?:[0-9a-f]{32}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-'
                 r'[0-9a-f]{12})$')


@dataclasses.dataclass
class Layout:
    """What one PCI function of a card shows of its FME and ports."""

    #: ``DFL``, ``OPAE``, or None for a function on neither driver.
    stack: str | None
    #: The container's name ('region0', 'intel-fpga-dev.1'), or None.
    container: str | None = None
    #: PR interface ids of the FME (the PF only), in reading order.
    interface_ids: list = dataclasses.field(default_factory=list)
    #: AFU ids of the ports this function holds.
    afu_ids: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class _Names:
    top: str
    container: re.Pattern
    fme: re.Pattern
    port: re.Pattern
    #: Whether a container must hold an FME or a port to count (DFL: the
    #: FME's PR regions are fpga_region devices too).
    must_hold: bool


_NAMES = {
    DFL: _Names('fpga_region', re.compile(r'^region(\d+)$'),
                re.compile(r'^dfl-fme\.(\d+)$'),
                re.compile(r'^dfl-port\.(\d+)$'), True),
    OPAE: _Names('fpga', re.compile(r'^intel-fpga-dev\.(\d+)$'),
                 re.compile(r'^intel-fpga-fme\.(\d+)$'),
                 re.compile(r'^intel-fpga-port\.(\d+)$'), False),
}
_PR_REGION = re.compile(r'^dfl-fme-region\.(\d+)$')
_REGION = _NAMES[DFL].container


def stack_of(fn):
    """``DFL``, ``OPAE`` or None (vfio-pci, no driver...) for ``fn``.

    The bound driver decides; a function whose driver link names neither
    is judged by the tree below it, which only an FPGA driver creates.
    """
    stack = STACK_OF_DRIVER.get(fn.driver)
    if stack is not None:
        return stack
    for stack, names in _NAMES.items():
        if _containers(fn, names):
            return stack
    return None


def read(fn, stack, is_pf, ports_moved=False):
    """The ``Layout`` of ``fn`` on ``stack``.

    What should be there and cannot be read is a defect of ``fn``: a
    missing container, a PF without FME (region unknown), a function
    without port (function unknown) unless ``ports_moved`` (the PF gave
    its ports to SR-IOV VFs), an id file missing, unreadable or malformed.
    """
    names = _NAMES[stack]
    layout = Layout(stack)
    containers = _containers(fn, names)
    if not containers:
        fn.defect('no %s with the FME and ports below it: the region and '
                  'function are unknown' % _pattern(names.container),
                  names.top)
        return layout
    layout.container = containers[0]
    fmes, ports = [], []
    for container in containers:
        entries = sysfs.listdir(fn.subdir(names.top, container))
        fmes += [(container, e) for e in _numbered(entries, names.fme)]
        ports += [(container, e) for e in _numbered(entries, names.port)]
    if is_pf and not fmes:
        fn.defect('no %s: the region is unknown' % _pattern(names.fme),
                  names.top, layout.container)
    for container, fme in fmes if is_pf else ():
        parts = (names.top, container, fme)
        found = (_dfl_interface_ids(fn, parts) if stack == DFL
                 else [_id(fn, parts + ('pr', 'interface_id'),
                           'PR interface id')])
        layout.interface_ids += [i for i in found if i]
    if not ports and not ports_moved:
        fn.defect('no %s: the function is unknown' % _pattern(names.port),
                  names.top, layout.container)
    for container, port in ports:
        layout.afu_ids.append(_id(fn, (names.top, container, port,
                                       'afu_id'), 'AFU id'))
    layout.interface_ids = _unique(layout.interface_ids)
    layout.afu_ids = _unique(i for i in layout.afu_ids if i)
    return layout


def _dfl_interface_ids(fn, fme_parts):
    """compat_id of each PR region the FME created (one per port)."""
    prs = _numbered(sysfs.listdir(fn.subdir(*fme_parts)), _PR_REGION)
    if not prs:
        fn.defect('no dfl-fme-region.N (the PR region of the FME): the '
                  'region is unknown', *fme_parts)
    found = []
    for pr in prs:
        base = fme_parts + (pr, 'fpga_region')
        regions = _numbered(sysfs.listdir(fn.subdir(*base)), _REGION)
        if not regions:
            fn.defect('no fpga_region/regionN: the region is unknown',
                      *fme_parts, pr)
        found += [_id(fn, base + (region, 'compat_id'), 'compat_id')
                  for region in regions]
    return found


def _id(fn, parts, what):
    """The id in the file ``parts`` below ``fn``, lower-case, or None (a
    defect of ``fn``)."""
    name = os.path.join(*parts)
    value = fn.optional(name, _parse_id, what)
    if value is None and not os.path.lexists(fn.subdir(*parts)):
        fn.defect('missing %s' % what, *parts)
    return value


def _parse_id(value):
    value = value.lower()
    if not _ID.match(value):
        raise ValueError(value)
    return value


def _containers(fn, names):
    top = fn.subdir(names.top)
    found = _numbered(sysfs.listdir(top), names.container)
    if names.must_hold:
        found = [name for name in found
                 if any(names.fme.match(e) or names.port.match(e)
                        for e in sysfs.listdir(os.path.join(top, name)))]
    return found


def _numbered(entries, pattern):
    """The entries ``pattern`` matches, by their number (2 before 10)."""
    matched = [(pattern.match(e), e) for e in entries]
    return [e for _n, e in sorted((int(m.group(1)), e)
                                  for m, e in matched if m)]


def _pattern(pattern):
    return pattern.pattern.strip('^$').replace(r'(\d+)', 'N').replace(
        '\\', '')


def _unique(values):
    return list(dict.fromkeys(values))

