"""Tests of NVML access with a stand-in pynvml module in sys.modules."""

import collections
import logging
import os
import sys
import types

import pytest

from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import nvml
from cyborg.drivers import nvml_xid
from cyborg.tests.fixtures import nvidia_hosts
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.fixtures import pcie_health

GPU = nvidia_hosts.T4_FRESH


class FakeNvml(types.ModuleType):
    """What the cyborg code calls of nvidia-ml-py's pynvml, with the
    constants and signatures of its pynvml.py (13.x): counts per GPU bus
    id, and an NVMLError for a call the GPU does not support."""

    NVML_FEATURE_ENABLED = 1
    NVML_TEMPERATURE_GPU = 0
    NVML_VOLATILE_ECC = 0
    NVML_AGGREGATE_ECC = 1
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_NOT_FOUND = 6
    NVML_ERROR_DRIVER_NOT_LOADED = 9
    NVML_ERROR_TIMEOUT = 10
    NVML_ERROR_GPU_IS_LOST = 15
    nvmlEventTypeSingleBitEccError = 0x1
    nvmlEventTypeXidCriticalError = 0x8

    class NVMLError(Exception):
        """pynvml's base error, with NVML's return code in ``value``."""

        def __init__(self, value):
            super().__init__(value)
            self.value = value

    def __init__(self, init_error=None):
        super().__init__('pynvml')
        self.init_error = init_error
        self.inits = 0
        self.shutdowns = 0
        self.gpus = {}
        #: method name -> raise NVMLError (not supported).
        self.unsupported = set()
        #: (bus id, event type, event data) waiting in the driver.
        self.events = collections.deque()
        #: what happened to event sets, in order.
        self.calls = []
        #: bus id -> event types registered for it.
        self.registered = {}
        #: bus ids whose driver cannot deliver Xid events.
        self.no_xid_events = set()
        #: bus ids of GPUs NVML has lost (fallen off the bus).
        self.lost = set()

    def xid(self, bus_id, number, event_type=nvmlEventTypeXidCriticalError):
        # NOTE(tests): NVML delivers only the events that happen after a
        # GPU was registered for them.
        if self.registered.get(bus_id, 0) & event_type:
            self.events.append((bus_id, event_type, number))

    def gpu(self, bus_id, **values):
        found = {'ecc': {(0, 0): 0, (1, 0): 0}, 'pending': 0,
                 'rows': (0, 0, 0, 0), 'util': 0, 'mem': (0, 0),
                 'temp': 40, 'power_mw': 0}
        found.update(values)
        self.gpus[bus_id] = found
        return found

    def nvmlInit(self):
        self.inits += 1
        if self.init_error:
            raise self.NVMLError(self.NVML_ERROR_DRIVER_NOT_LOADED)

    def nvmlShutdown(self):
        self.calls.append('shutdown')
        self.shutdowns += 1

    def _get(self, name, handle):
        if name in self.unsupported:
            raise self.NVMLError(self.NVML_ERROR_NOT_SUPPORTED)
        return self.gpus[handle]

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        # NOTE(tests): 13.x converts a str to bytes itself; the C library
        # gets bytes either way.
        if isinstance(bus_id, bytes):
            bus_id = bus_id.decode()
        if bus_id in self.lost:
            raise self.NVMLError(self.NVML_ERROR_GPU_IS_LOST)
        if bus_id not in self.gpus:
            raise self.NVMLError(self.NVML_ERROR_NOT_FOUND)
        return bus_id

    def nvmlDeviceGetPciInfo(self, handle):
        # NOTE(tests): NVML's busId: an 8-digit domain, upper case, bytes.
        domain, rest = handle.split(':', 1)
        return types.SimpleNamespace(
            busId=('%08X:%s' % (int(domain, 16), rest.upper())).encode())

    def nvmlEventSetCreate(self):
        self.calls.append('create')
        return object()

    def nvmlEventSetFree(self, event_set):
        self.calls.append('free')

    def nvmlDeviceGetSupportedEventTypes(self, handle):
        self.calls.append('supported')
        if handle in self.no_xid_events:
            return self.nvmlEventTypeSingleBitEccError
        return (self.nvmlEventTypeSingleBitEccError
                | self.nvmlEventTypeXidCriticalError)

    def nvmlDeviceRegisterEvents(self, handle, event_types, event_set):
        self.registered[handle] = event_types

    def nvmlEventSetWait_v2(self, event_set, timeout_ms):
        assert timeout_ms == 0, 'a health check must never wait'
        # NOTE(tests): NVML delivers the events of registered GPUs only.
        if not self.events:
            raise self.NVMLError(self.NVML_ERROR_TIMEOUT)
        bus_id, event_type, number = self.events.popleft()
        return types.SimpleNamespace(
            device=bus_id, eventType=event_type, eventData=number,
            gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)

    def nvmlDeviceGetTotalEccErrors(self, handle, error_type, counter_type):
        return self._get('ecc', handle)['ecc'][(error_type, counter_type)]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle):
        return self._get('pending', handle)['pending']

    def nvmlDeviceGetRemappedRows(self, handle):
        return self._get('rows', handle)['rows']

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=self._get('util', handle)['util'],
                                     memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle):
        total, used = self._get('mem', handle)['mem']
        return types.SimpleNamespace(total=total, used=used,
                                     free=total - used)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self._get('temp', handle)['temp']

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._get('power', handle)['power_mw']


@pytest.fixture
def fake_nvml(monkeypatch):
    """Install a FakeNvml as pynvml; NVML loads again for each test."""
    module = FakeNvml()
    monkeypatch.setitem(sys.modules, 'pynvml', module)
    nvml.forget()
    yield module
    nvml.forget()


@pytest.fixture
def no_nvml(monkeypatch):
    # NOTE(tests): None in sys.modules makes the import raise ImportError.
    monkeypatch.setitem(sys.modules, 'pynvml', None)
    nvml.forget()
    yield
    nvml.forget()


def _check(address=GPU):
    findings = health.Findings()
    nvml.check(address, findings)
    return findings.result()


def test_without_the_package_nothing_runs(no_nvml):
    assert nvml.library() is None
    assert _check() == base.Health(base.OK, None, ())
    assert nvml.sample(GPU) == {}


def test_nvml_that_does_not_initialise_is_absent(fake_nvml):
    fake_nvml.init_error = 'Driver Not Loaded'
    fake_nvml.gpu(GPU)
    assert nvml.library() is None
    assert nvml.library() is None
    assert fake_nvml.inits == 1
    assert _check().sources == ()


def test_use_nvml_off_keeps_it_unloaded(fake_nvml, override):
    override('use_nvml', False, group='health')
    fake_nvml.gpu(GPU)
    assert nvml.library() is None and fake_nvml.inits == 0


def test_a_gpu_nvml_does_not_know_is_not_judged(fake_nvml):
    fake_nvml.gpu('0000:af:00.0')
    assert _check().sources == ()
    assert nvml.sample(GPU) == {}


def test_a_healthy_gpu(fake_nvml):
    fake_nvml.gpu(GPU)
    assert _check() == base.Health(base.OK, None, ('nvml',))


def test_uncorrected_volatile_ecc_errors_fail_the_gpu(fake_nvml):
    fake_nvml.gpu(GPU, ecc={(0, 0): 10, (1, 0): 2, (1, 1): 7})
    found = _check()
    assert (found.state, found.reason) == (
        base.FAILED, 'NVML uncorrected ECC errors: 2')


def test_pending_page_retirement_degrades_the_gpu(fake_nvml):
    fake_nvml.gpu(GPU, pending=fake_nvml.NVML_FEATURE_ENABLED)
    found = _check()
    assert (found.state, found.reason) == (
        base.DEGRADED, 'NVML: retired pages wait for a GPU reset')


@pytest.mark.parametrize('rows, state, reason', [
    ((3, 1, 1, 0), base.DEGRADED, 'NVML: remapped rows wait for a GPU '
                                  'reset'),
    ((3, 1, 0, 1), base.FAILED, 'NVML: row remapping failed'),
    ((3, 1, 0, 0), base.OK, None)])
def test_row_remapping(fake_nvml, rows, state, reason):
    fake_nvml.gpu(GPU, rows=rows)
    found = _check()
    assert (found.state, found.reason) == (state, reason)


def test_calls_a_gpu_does_not_support_cost_only_their_reading(fake_nvml):
    fake_nvml.gpu(GPU, temp=61, power_mw=70250)
    fake_nvml.unsupported.update({'ecc', 'pending', 'rows', 'util'})
    fake_nvml.no_xid_events.add(GPU)
    assert _check() == base.Health(base.OK, None, ('nvml',))
    assert nvml.sample(GPU) == {'memory_used_bytes': 0.0,
                                'memory_total_bytes': 0.0,
                                'temperature_celsius': 61.0,
                                'power_watts': 70.25}


def test_sample_in_series_units(fake_nvml):
    fake_nvml.gpu(GPU, util=37, mem=(16 << 30, 3 << 30), temp=55,
                  power_mw=41500, ecc={(0, 0): 12, (1, 0): 0})
    assert nvml.sample(GPU) == {
        'utilization_ratio': 0.37,
        'memory_used_bytes': float(3 << 30),
        'memory_total_bytes': float(16 << 30),
        'temperature_celsius': 55.0, 'power_watts': 41.5,
        'ecc_corrected_total': 12.0, 'ecc_uncorrected_total': 0.0,
        'xid_errors_total': 0.0}


def test_forget_shuts_nvml_down(fake_nvml):
    assert nvml.library() is fake_nvml
    nvml.forget()
    assert fake_nvml.shutdowns == 1


def test_forget_frees_the_event_set_before_the_shutdown(fake_nvml):
    fake_nvml.gpu(GPU)
    _check()
    nvml.forget()
    assert fake_nvml.calls == ['create', 'supported', 'free', 'shutdown']


# --- Xid errors -------------------------------------------------------------

# NOTE(tests): 2026-11-26T05:40:01Z
NOW = 1795671601.0


@pytest.fixture
def clock(monkeypatch):
    """nvml_xid's clock, moved by the test."""
    now = [NOW]
    monkeypatch.setattr(nvml_xid, '_now', lambda: now[0])
    return now


@pytest.mark.parametrize('bus_id, address', [
    (b'00000000:3B:00.0', '0000:3b:00.0'),
    ('00000001:AF:1F.7', '0001:af:1f.7'),
])
def test_nvml_bus_ids_in_sysfs_form(bus_id, address):
    assert nvml_xid.bus_address(bus_id) == address


def test_an_xid_is_seen_only_once_the_gpu_is_watched(fake_nvml, clock):
    fake_nvml.gpu(GPU)
    fake_nvml.xid(GPU, 79)
    assert _check() == base.Health(base.OK, None, ('nvml',))
    assert fake_nvml.registered == {
        GPU: fake_nvml.nvmlEventTypeXidCriticalError}
    fake_nvml.xid(GPU, 79)
    assert _check() == base.Health(
        base.FAILED, 'NVML: Xid 79 (GPU has fallen off the bus) at '
        '2026-11-26T05:40:01Z', ('nvml',))


@pytest.mark.parametrize('xid, state', [
    (48, base.FAILED), (95, base.FAILED), (64, base.FAILED),
    (63, base.DEGRADED), (94, base.DEGRADED), (74, base.DEGRADED),
    (13, base.OK), (31, base.OK), (43, base.OK),
])
def test_each_xid_judges_as_configured(fake_nvml, clock, xid, state):
    fake_nvml.gpu(GPU)
    _check()
    fake_nvml.xid(GPU, xid)
    found = _check()
    assert found.state == state
    assert nvml.sample(GPU)['xid_errors_total'] == 1.0


def test_an_xid_in_both_lists_fails(fake_nvml, clock, override):
    override('nvml_xid_degraded', [13], group='health')
    override('nvml_xid_failed', [13], group='health')
    fake_nvml.gpu(GPU)
    _check()
    fake_nvml.xid(GPU, 13)
    assert _check().reason == 'NVML: Xid 13 (Xid) at 2026-11-26T05:40:01Z'
    assert _check().state == base.FAILED


def test_an_xid_judges_for_the_window_only(fake_nvml, clock, override):
    override('nvml_xid_window', 600, group='health')
    fake_nvml.gpu(GPU)
    _check()
    fake_nvml.xid(GPU, 48)
    assert _check().state == base.FAILED
    clock[0] += 600
    assert _check().state == base.FAILED
    clock[0] += 1
    assert _check() == base.Health(base.OK, None, ('nvml',))
    assert nvml.sample(GPU)['xid_errors_total'] == 1.0


def test_the_worst_latest_xid_names_the_reason(fake_nvml, clock):
    fake_nvml.gpu(GPU)
    _check()
    for xid in (94, 48, 13):
        fake_nvml.xid(GPU, xid)
        clock[0] += 10
        _check()
    fake_nvml.xid(GPU, 79)
    clock[0] += 10
    fake_nvml.xid(GPU, 63)
    assert _check() == base.Health(
        base.FAILED, 'NVML: Xid 79 (GPU has fallen off the bus) at '
        '2026-11-26T05:40:41Z, 4 Xid errors in 3600 s', ('nvml',))


def test_an_xid_drained_for_another_gpu_is_kept_for_it(fake_nvml, clock):
    other = '0000:af:00.0'
    fake_nvml.gpu(GPU)
    fake_nvml.gpu(other)
    _check(GPU)
    _check(other)
    fake_nvml.xid(other, 95)
    assert _check(GPU).state == base.OK
    assert not fake_nvml.events
    assert _check(other).reason.startswith('NVML: Xid 95 (uncontained ECC')
    assert nvml.sample(GPU)['xid_errors_total'] == 0.0


def test_other_event_types_judge_nothing(fake_nvml, clock):
    fake_nvml.gpu(GPU)
    _check()
    fake_nvml.registered[GPU] |= fake_nvml.nvmlEventTypeSingleBitEccError
    fake_nvml.xid(GPU, 0, event_type=fake_nvml.nvmlEventTypeSingleBitEccError)
    assert _check().state == base.OK
    assert nvml.sample(GPU)['xid_errors_total'] == 0.0


def test_a_gpu_without_xid_events_is_judged_without_them(fake_nvml, clock,
                                                         caplog):
    caplog.set_level(logging.INFO, logger=nvml_xid.__name__)
    fake_nvml.gpu(GPU, ecc={(0, 0): 0, (1, 0): 3})
    fake_nvml.no_xid_events.add(GPU)
    assert _check().reason == 'NVML uncorrected ECC errors: 3'
    assert _check().reason == 'NVML uncorrected ECC errors: 3'
    assert 'xid_errors_total' not in nvml.sample(GPU)
    assert fake_nvml.calls.count('supported') == 1
    assert GPU not in fake_nvml.registered
    assert caplog.text.count('cannot report the Xid errors of GPU') == 1


def test_a_gpu_lost_off_the_bus_fails_naming_its_xid(fake_nvml, clock):
    fake_nvml.gpu(GPU)
    _check()
    fake_nvml.xid(GPU, 79)
    fake_nvml.lost.add(GPU)
    assert _check() == base.Health(
        base.FAILED, 'NVML: GPU is lost (has fallen off the bus); NVML: '
        'Xid 79 (GPU has fallen off the bus) at 2026-11-26T05:40:01Z',
        ('nvml',))


def test_a_gpu_lost_before_it_was_watched_fails_all_the_same(fake_nvml):
    fake_nvml.gpu(GPU)
    fake_nvml.lost.add(GPU)
    assert _check() == base.Health(
        base.FAILED, 'NVML: GPU is lost (has fallen off the bus)',
        ('nvml',))
    assert fake_nvml.registered == {}


def test_a_check_that_errors_is_unknown_never_failed(fake_nvml,
                                                     monkeypatch):
    fake_nvml.gpu(GPU)

    def broken(handle, error_type, counter_type):
        raise TypeError('bytes or integer address expected')

    monkeypatch.setattr(fake_nvml, 'nvmlDeviceGetTotalEccErrors', broken,
                        raising=False)
    assert _check() == base.Health(
        base.UNKNOWN, 'NVML check errored: TypeError: bytes or integer '
        'address expected', ('nvml',))
    assert nvml.sample(GPU) == {}


def test_an_error_does_not_hide_a_verdict(fake_nvml, monkeypatch):
    fake_nvml.gpu(GPU, pending=fake_nvml.NVML_FEATURE_ENABLED)

    def broken(handle):
        raise ValueError('not enough values to unpack')

    monkeypatch.setattr(fake_nvml, 'nvmlDeviceGetRemappedRows', broken,
                        raising=False)
    found = _check()
    assert found.state == base.DEGRADED
    assert found.reason == ('NVML: retired pages wait for a GPU reset; NVML '
                            'check errored: ValueError: not enough values '
                            'to unpack')


def test_a_call_missing_from_an_older_pynvml_loses_its_reading(fake_nvml,
                                                                monkeypatch):
    fake_nvml.gpu(GPU, rows=(0, 0, 0, 1))
    monkeypatch.delattr(FakeNvml, 'nvmlDeviceGetRemappedRows')
    assert _check() == base.Health(base.OK, None, ('nvml',))


def test_an_xid_storm_never_holds_a_check(fake_nvml, clock):
    fake_nvml.gpu(GPU)
    _check()
    for _ in range(300):
        fake_nvml.xid(GPU, 13)
    assert _check().state == base.OK
    assert len(fake_nvml.events) == 300 - nvml_xid._DRAIN_LIMIT
    assert nvml.sample(GPU)['xid_errors_total'] == 300.0


def _gpu_host(tmp_path, override):
    root = pci_hosts.copy_host(nvidia_hosts.NAME, tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    driver = nvidia_gpu.NvidiaGpuDriver()
    return driver, pci_hosts.by_address(pci_hosts.discover(driver, root))


def test_the_gpu_driver_adds_nvml_to_its_sources(fake_nvml, tmp_path,
                                                  override):
    driver, devices = _gpu_host(tmp_path, override)
    fake_nvml.gpu(GPU, ecc={(0, 0): 0, (1, 0): 1})
    found = driver.health(devices[GPU])
    assert found.sources == ('pci', 'aer', 'link', 'nvml')
    assert (found.state, found.reason) == (
        base.FAILED, 'NVML uncorrected ECC errors: 1')


def test_the_gpu_driver_without_nvml_runs_sysfs_checks(no_nvml, tmp_path,
                                                        override):
    driver, devices = _gpu_host(tmp_path, override)
    assert driver.health(devices[GPU]) == base.Health(
        base.OK, None, ('pci', 'aer', 'link'))


def test_the_gpu_driver_metrics_prefer_nvml(fake_nvml, tmp_path,
                                            override):
    driver, devices = _gpu_host(tmp_path, override)
    # NOTE(tests): the RTX 6000 of the fixture has a hwmon device.
    fake_nvml.gpu(nvidia_hosts.RTX, util=50, mem=(24 << 30, 1 << 30),
                  temp=47, power_mw=30000)
    sample = driver.metrics(devices[nvidia_hosts.RTX])
    assert sample['temperature_celsius'] == 47.0
    assert sample['power_watts'] == 30.0
    assert sample['utilization_ratio'] == 0.5
    assert sample['aer_fatal_total'] == 0.0
    assert list(sample) == [name for name in (
        'utilization_ratio', 'memory_used_bytes', 'memory_total_bytes',
        'temperature_celsius', 'power_watts', 'ecc_corrected_total',
        'ecc_uncorrected_total', 'xid_errors_total', 'aer_correctable_total',
        'aer_nonfatal_total', 'aer_fatal_total') if name in sample]


def test_a_gpu_on_vfio_pci_is_judged_by_its_pci_checks(fake_nvml, tmp_path,
                                                       override):
    # NOTE(tests): NVML manages the GPUs on the nvidia driver only; for
    # one on vfio-pci it answers NOT_FOUND, as the stand-in does for a
    # bus id it does not know. The card's own PCIe checks still run.
    driver, devices = _gpu_host(tmp_path, override)
    fake_nvml.gpu(GPU)
    a10 = devices[nvidia_hosts.A10_VFIO]
    assert driver.health(a10) == base.Health(
        base.OK, None, ('pci', 'aer', 'link'))
    assert nvml_xid.watching(nvidia_hosts.A10_VFIO) is None
    fn_dir = os.path.join(str(tmp_path / 'sys'), 'bus', 'pci', 'devices',
                          nvidia_hosts.A10_VFIO)
    pcie_health.write_aer(fn_dir, 'aer_dev_fatal',
                          {'Surprise Down Error': 1})
    assert driver.health(a10) == base.Health(
        base.FAILED, 'AER fatal errors: 1', ('pci', 'aer', 'link'))
    sample = driver.metrics(a10)
    assert sample['aer_fatal_total'] == 1.0
    assert 'utilization_ratio' not in sample
