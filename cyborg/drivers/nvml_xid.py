"""NVIDIA Xid errors, read from an NVML event set without blocking."""

# NOTE(nvml): an Xid is an event, not a state NVML can be asked about:
# the NVIDIA driver reports it once and forgets it. The health checks
# are otherwise stateless readings, so the agent keeps the one piece of
# memory they need here: one event set per process, each GPU registered
# for critical Xid events the first time it is checked, and the events
# drained (a wait of 0 ms, never blocking a report) on every check or
# sample. An Xid then counts against its GPU for [health]
# nvml_xid_window seconds; the lasting damage behind one (ECC errors,
# pages or rows waiting for a reset) keeps failing the GPU through the
# stateful NVML readings after that, until the GPU is reset.

import collections
import datetime
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging

from cyborg.drivers import base

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: What NVIDIA's Xid catalogue says of the Xids that judge a GPU.
MEANING = {
    48: 'double-bit ECC error',
    61: 'internal micro-controller breakpoint',
    62: 'internal micro-controller halt',
    63: 'ECC page retirement or row remapping recorded',
    64: 'ECC page retirement or row remapping failed',
    74: 'NVLink error',
    79: 'GPU has fallen off the bus',
    92: 'high single-bit ECC error rate',
    94: 'contained ECC error',
    95: 'uncontained ECC error',
    119: 'GSP RPC timeout',
    120: 'GSP error',
    140: 'unrecovered ECC error',
}
#: Most events one drain takes, so that an Xid storm cannot hold a report.
_DRAIN_LIMIT = 256


class _Watch:
    """The event set of one loaded NVML, and the Xids seen per GPU."""

    def __init__(self):
        self.lock = threading.Lock()
        self.event_set = None
        self.nvml = None
        self.watched = set()
        self.unwatched = set()
        self.seen = collections.defaultdict(collections.deque)
        self.totals = collections.Counter()


_WATCH = _Watch()


def _now() -> float:
    return time.time()


def is_error(nvml, exc, name) -> bool:
    """Whether ``exc`` is the NVMLError whose return code pynvml names
    ``name`` (such as ``NVML_ERROR_TIMEOUT``)."""
    return getattr(exc, 'value', None) == getattr(nvml, name, object())


def bus_address(bus_id) -> str:
    """NVML's bus id (``00000000:3B:00.0``, bytes or str) in the form
    sysfs names functions with (``0000:3b:00.0``)."""
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode('ascii', 'replace')
    domain, _sep, rest = bus_id.strip().partition(':')
    return '%04x:%s' % (int(domain, 16), rest.lower())


def _watch(nvml, address, handle) -> bool:
    """Register the GPU for critical Xid events once; False where NVML
    cannot deliver them for it."""
    if _WATCH.nvml is not nvml:
        _reset(nvml)
    if address in _WATCH.watched:
        return True
    if address in _WATCH.unwatched:
        return False
    kind = nvml.nvmlEventTypeXidCriticalError
    try:
        if _WATCH.event_set is None:
            _WATCH.event_set = nvml.nvmlEventSetCreate()
        if not nvml.nvmlDeviceGetSupportedEventTypes(handle) & kind:
            raise nvml.NVMLError(nvml.NVML_ERROR_NOT_SUPPORTED)
        nvml.nvmlDeviceRegisterEvents(handle, kind, _WATCH.event_set)
    except nvml.NVMLError as exc:
        LOG.info('NVML cannot report the Xid errors of GPU %s (%s): it '
                 'is judged without them', address, exc)
        _WATCH.unwatched.add(address)
        return False
    _WATCH.watched.add(address)
    return True


def _drain(nvml) -> None:
    kind = nvml.nvmlEventTypeXidCriticalError
    for _count in range(_DRAIN_LIMIT):
        try:
            event = nvml.nvmlEventSetWait_v2(_WATCH.event_set, 0)
        except nvml.NVMLError as exc:
            if not is_error(nvml, exc, 'NVML_ERROR_TIMEOUT'):
                LOG.debug('NVML nvmlEventSetWait_v2 failed: %s', exc)
            return
        if not event.eventType & kind:
            continue
        try:
            address = bus_address(
                nvml.nvmlDeviceGetPciInfo(event.device).busId)
        except (nvml.NVMLError, ValueError) as exc:
            LOG.warning('NVML reported Xid %d of a GPU it cannot name: %s',
                        event.eventData, exc)
            continue
        xid = int(event.eventData)
        # NOTE(nvml): the Xids an application causes can come in bursts;
        # only those that judge the GPU are worth an operator's warning.
        log = LOG.warning if _state(xid) else LOG.info
        log('NVML reports Xid %d (%s) on GPU %s', xid,
            MEANING.get(xid, 'judges nothing'), address)
        _WATCH.seen[address].append((xid, _now()))
        _WATCH.totals[address] += 1


def _recent(address):
    """The Xids of ``address`` still inside the window, oldest first."""
    seen = _WATCH.seen.get(address)
    if not seen:
        return []
    since = _now() - CONF.health.nvml_xid_window
    while seen and seen[0][1] < since:
        seen.popleft()
    return list(seen)


def _state(xid):
    if xid in CONF.health.nvml_xid_failed:
        return base.FAILED
    if xid in CONF.health.nvml_xid_degraded:
        return base.DEGRADED
    return None


def judge(nvml, address, handle, findings) -> None:
    """Add the GPU's recent Xids that judge it to ``findings``: the
    worst, latest one names the reason.

    ``handle`` None: NVML has lost the GPU. Its Xids are still judged
    when it was watched before, since the one that says why (79, fallen
    off the bus) comes as it goes.
    """
    with _WATCH.lock:
        if handle is None:
            if _WATCH.nvml is not nvml or address not in _WATCH.watched:
                return
        elif not _watch(nvml, address, handle):
            return
        _drain(nvml)
        judged = [(xid, at, _state(xid)) for xid, at in _recent(address)]
    judged = [item for item in judged if item[2] is not None]
    if not judged:
        return
    worst = base.FAILED if any(
        state == base.FAILED for _x, _a, state in judged) else base.DEGRADED
    xid, at = [(x, a) for x, a, state in judged if state == worst][-1]
    stamp = datetime.datetime.fromtimestamp(
        at, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    text = 'NVML: Xid %d (%s) at %s' % (xid, MEANING.get(xid, 'Xid'), stamp)
    if len(judged) > 1:
        text += ', %d Xid errors in %d s' % (
            len(judged), CONF.health.nvml_xid_window)
    findings.found(worst, 'nvml', text)


def watching(address) -> bool | None:
    """Whether the GPU at ``address`` is registered for Xid events: True,
    False where NVML cannot deliver them for it, None when not tried."""
    with _WATCH.lock:
        if address in _WATCH.watched:
            return True
        return False if address in _WATCH.unwatched else None


def total(nvml, address, handle) -> int | None:
    """Xid errors NVML reported for the GPU since the agent began to
    watch it; None where it cannot watch it."""
    with _WATCH.lock:
        if not _watch(nvml, address, handle):
            return None
        _drain(nvml)
        return _WATCH.totals[address]


def _reset(nvml) -> None:
    """Forget the event set of an NVML that was shut down or replaced,
    freeing it while that NVML is still loaded."""
    if _WATCH.event_set is not None and _WATCH.nvml is not None:
        try:
            _WATCH.nvml.nvmlEventSetFree(_WATCH.event_set)
        except _WATCH.nvml.NVMLError as exc:
            LOG.debug('nvmlEventSetFree failed: %s', exc)
    _WATCH.event_set = None
    _WATCH.nvml = nvml
    _WATCH.watched.clear()
    _WATCH.unwatched.clear()
    _WATCH.seen.clear()
    _WATCH.totals.clear()


def forget() -> None:
    """Free the event set and forget every Xid (before nvmlShutdown)."""
    with _WATCH.lock:
        _reset(None)
