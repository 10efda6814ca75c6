"""Tests of NVML access with a stand-in pynvml module in sys.modules."""

import sys
import types

import pytest

from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import nvml
from cyborg.tests.fixtures import nvidia_hosts
from cyborg.tests.fixtures import pci_hosts

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

    class NVMLError(Exception):
        """pynvml's base error."""

    def __init__(self, init_error=None):
        super().__init__('pynvml')
        self.init_error = init_error
        self.inits = 0
        self.shutdowns = 0
        self.gpus = {}
        #: method name -> raise NVMLError (not supported).
        self.unsupported = set()

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
            raise self.NVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shutdowns += 1

    def _get(self, name, handle):
        if name in self.unsupported:
            raise self.NVMLError('Not Supported')
        return self.gpus[handle]

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        if bus_id not in self.gpus:
            raise self.NVMLError('Not Found')
        return bus_id

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
        'ecc_corrected_total': 12.0, 'ecc_uncorrected_total': 0.0}


def test_forget_shuts_nvml_down(fake_nvml):
    assert nvml.library() is fake_nvml
    nvml.forget()
    assert fake_nvml.shutdowns == 1


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
        'ecc_uncorrected_total', 'aer_correctable_total',
        'aer_nonfatal_total', 'aer_fatal_total') if name in sample]
