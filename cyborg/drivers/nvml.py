"""NVIDIA's NVML through nvidia-ml-py, where it is installed and loads."""

# NOTE(nvml): nvidia-ml-py (module pynvml) is an optional extra; without
# it, or where nvmlInit() fails (no NVIDIA driver, a container without
# libnvidia-ml), the GPU driver keeps to its sysfs checks. The module is
# imported and initialised on first use only, once per process: a host
# does not grow an NVIDIA driver between two report intervals, and
# retrying a failing nvmlInit on every pass would cost each pass a
# dlopen. NVML calls are judged one by one: a GPU that does not support
# one (NVML_ERROR_NOT_SUPPORTED: no ECC on a T4 in some modes, no row
# remapping before Ampere) loses that reading only.

import importlib
import importlib.metadata
import os
import threading
import types

from oslo_config import cfg
from oslo_log import log as logging

from cyborg.drivers import base
from cyborg.drivers import nvml_xid

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

_LOCK = threading.Lock()
_STATE = {'tried': False, 'module': None}


def library() -> types.ModuleType | None:
    """The initialised ``pynvml`` module, or None where NVML is absent,
    does not initialise, or ``[health] use_nvml`` is off."""
    if not CONF.health.use_nvml:
        return None
    with _LOCK:
        if not _STATE['tried']:
            _STATE['tried'] = True
            _STATE['module'] = _load()
        return _STATE['module']


def _load():
    try:
        module = importlib.import_module('pynvml')
    except ImportError:
        LOG.info('nvidia-ml-py is not installed: NVIDIA GPUs are judged '
                 'by sysfs only')
        return None
    try:
        module.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - any NVML failure means none
        LOG.info('NVML does not initialise (%s): NVIDIA GPUs are judged '
                 'by sysfs only', exc)
        return None
    LOG.info('NVML initialised: NVIDIA GPUs are also judged through it')
    return module


def forget() -> None:
    """Load NVML again on next use (tests, and after ``[health]`` changes).
    """
    with _LOCK:
        module = _STATE['module']
        _STATE.update(tried=False, module=None)
    nvml_xid.forget()
    if module is not None:
        try:
            module.nvmlShutdown()
        except Exception as exc:  # noqa: BLE001 - nothing left to release
            LOG.debug('nvmlShutdown failed: %s', exc)


def _call(nvml, name, *args):
    """``nvml.<name>(*args)``, or None when NVML answers with an error or
    this pynvml lacks the function."""
    try:
        function = getattr(nvml, name)
    except AttributeError:
        # NOTE(nvml): older nvidia-ml-py releases lack newer calls; the
        # reading is lost, the GPU is not judged by its absence.
        _log_once(('missing', name), 'nvidia-ml-py %s has no %s: that '
                  'NVML reading is left out', _version(nvml), name)
        return None
    try:
        return function(*args)
    except nvml.NVMLError as exc:
        LOG.debug('NVML %s failed: %s', name, exc)
        return None


_LOGGED = set()


def _log_once(key, msg, *args):
    if key not in _LOGGED:
        _LOGGED.add(key)
        LOG.info(msg, *args)


def _version(nvml) -> str:
    """The nvidia-ml-py release the loaded pynvml comes from, where its
    metadata says; 'unknown' for a module from elsewhere."""
    try:
        dist = importlib.metadata.distribution('nvidia-ml-py')
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'
    where = getattr(nvml, '__file__', None)
    if where and os.path.realpath(str(dist.locate_file('pynvml.py'))) != \
            os.path.realpath(where):
        return 'unknown'
    return dist.version


def _handle(nvml, address):
    """(handle, None), or (None, the NVMLError of the lookup).

    NOTE(nvml): nvmlDeviceGetHandleByPciBusId takes "domain:bus:
    device.function" in hex, the form sysfs uses, as a C string: the
    nvidia-ml-py releases before 11.515.48 hand the argument to c_char_p
    unconverted, which takes bytes only, so it is given bytes.
    """
    try:
        return nvml.nvmlDeviceGetHandleByPciBusId(
            address.encode('ascii')), None
    except nvml.NVMLError as exc:
        return None, exc


def _lost(nvml, error) -> bool:
    return nvml_xid.is_error(nvml, error, 'NVML_ERROR_GPU_IS_LOST')


def check(address: str, findings) -> None:
    """Judge the GPU at ``address`` by NVML, when it is there: a GPU NVML
    has lost (fallen off the bus), volatile uncorrected ECC errors or a
    row remapping failure fail it, pages or rows waiting to be retired at
    the next reset degrade it, and so do its recent Xid errors as
    ``[health] nvml_xid_*`` rank them.

    NOTE(nvml): an error of this code or of the pynvml wrapper (a
    TypeError of an older release, say) is no verdict on the hardware:
    it is recorded as an error of the check, which makes the health
    unknown unless another check found the GPU degraded or failed.
    """
    nvml = library()
    if nvml is None:
        return
    try:
        _judge(nvml, address, findings)
    except Exception as exc:  # noqa: BLE001 - never a hardware verdict
        _log_once(('errored', address, type(exc)), 'The NVML check of GPU '
                  '%s errored: %s: %s', address, type(exc).__name__, exc)
        findings.errored('nvml', 'NVML check errored: %s: %s'
                         % (type(exc).__name__, exc))


def _judge(nvml, address, findings):
    handle, error = _handle(nvml, address)
    if handle is None:
        if error is not None and _lost(nvml, error):
            findings.found(base.FAILED, 'nvml', 'NVML: GPU is lost (has '
                           'fallen off the bus)')
            nvml_xid.judge(nvml, address, None, findings)
        elif error is not None:
            # NOTE(nvml): NOT_FOUND is the usual answer for a GPU on
            # vfio-pci or another host driver: NVML does not manage it.
            LOG.debug('NVML has no handle of GPU %s: %s', address, error)
        return
    findings.ran('nvml')
    uncorrected = _call(nvml, 'nvmlDeviceGetTotalEccErrors', handle,
                        nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                        nvml.NVML_VOLATILE_ECC)
    if uncorrected:
        findings.found(base.FAILED, 'nvml', 'NVML uncorrected ECC errors: '
                       '%d' % uncorrected)
    pending = _call(nvml, 'nvmlDeviceGetRetiredPagesPendingStatus', handle)
    if pending == nvml.NVML_FEATURE_ENABLED:
        findings.found(base.DEGRADED, 'nvml', 'NVML: retired pages wait for '
                       'a GPU reset')
    rows = _call(nvml, 'nvmlDeviceGetRemappedRows', handle)
    if rows is not None:
        _corrected, _uncorrected, rows_pending, rows_failed = rows
        if rows_failed:
            findings.found(base.FAILED, 'nvml', 'NVML: row remapping '
                           'failed')
        elif rows_pending:
            findings.found(base.DEGRADED, 'nvml', 'NVML: remapped rows '
                           'wait for a GPU reset')
    nvml_xid.judge(nvml, address, handle, findings)


def sample(address: str) -> dict[str, float]:
    """What NVML tells of the GPU at ``address`` in ``telemetry.SERIES``
    names; {} without NVML, or where it cannot be read."""
    nvml = library()
    if nvml is None:
        return {}
    try:
        found = _sample(nvml, address)
    except Exception as exc:  # noqa: BLE001 - a sample is never a verdict
        _log_once(('sample', address, type(exc)), 'NVML cannot sample GPU '
                  '%s: %s: %s', address, type(exc).__name__, exc)
        return {}
    return {name: float(value) for name, value in found.items()}


def _sample(nvml, address):
    handle, _error = _handle(nvml, address)
    if handle is None:
        return {}
    found = {}
    rates = _call(nvml, 'nvmlDeviceGetUtilizationRates', handle)
    if rates is not None:
        found['utilization_ratio'] = rates.gpu / 100
    memory = _call(nvml, 'nvmlDeviceGetMemoryInfo', handle)
    if memory is not None:
        found['memory_used_bytes'] = memory.used
        found['memory_total_bytes'] = memory.total
    temperature = _call(nvml, 'nvmlDeviceGetTemperature', handle,
                        nvml.NVML_TEMPERATURE_GPU)
    if temperature is not None:
        found['temperature_celsius'] = temperature
    milliwatts = _call(nvml, 'nvmlDeviceGetPowerUsage', handle)
    if milliwatts is not None:
        found['power_watts'] = milliwatts / 1000
    for series, error_type in (
            ('ecc_corrected_total', nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            ('ecc_uncorrected_total',
             nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
        count = _call(nvml, 'nvmlDeviceGetTotalEccErrors', handle,
                      error_type, nvml.NVML_VOLATILE_ECC)
        if count is not None:
            found[series] = count
    xids = nvml_xid.total(nvml, address, handle)
    if xids is not None:
        found['xid_errors_total'] = xids
    return found


def _text(value):
    # NOTE(nvml): releases before 11.515.48 return C strings as bytes.
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    return value


def identity(address: str) -> dict[str, str]:
    """What NVML names the GPU at ``address`` by, and its driver: name,
    uuid, serial, vbios, driver, NVML and CUDA driver versions; {} without
    NVML or a handle. What a GPU cannot tell is left out."""
    nvml = library()
    if nvml is None:
        return {}
    handle, _error = _handle(nvml, address)
    if handle is None:
        return {}
    found = {'pynvml': _version(nvml)}
    for key, name, args in (
            ('name', 'nvmlDeviceGetName', (handle,)),
            ('uuid', 'nvmlDeviceGetUUID', (handle,)),
            ('serial', 'nvmlDeviceGetSerial', (handle,)),
            ('vbios', 'nvmlDeviceGetVbiosVersion', (handle,)),
            ('driver', 'nvmlSystemGetDriverVersion', ()),
            ('nvml', 'nvmlSystemGetNVMLVersion', ()),
            ('cuda_driver', 'nvmlSystemGetCudaDriverVersion', ())):
        value = _text(_call(nvml, name, *args))
        if value is not None:
            found[key] = str(value)
    return found
