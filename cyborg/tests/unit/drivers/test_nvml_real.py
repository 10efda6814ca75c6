"""Tests of NVML access through nvidia-ml-py's real pynvml, oldest and
newest, over a fake libnvidia-ml (cyborg/tests/fixtures/fake_libnvml.py).
"""

# NOTE(tests): test_nvml.py judges Cyborg's logic against a stand-in
# pynvml; these run the same paths through the pynvml.py of each
# nvidia-ml-py release Cyborg accepts at both ends (the ``libnvml``
# fixture, cyborg/tests/conftest.py), so that what differs between them
# (str or bytes arguments and results, structures, missing functions)
# shows.

import pytest

from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import nvml
from cyborg.drivers import nvml_xid
from cyborg.tests.fixtures import fake_libnvml
from cyborg.tests.fixtures import nvidia_hosts
from cyborg.tests.fixtures import pci_hosts

GPU = nvidia_hosts.T4_FRESH
# NOTE(tests): 2026-11-26T05:40:01Z, as in test_nvml.py.
NOW = 1795671601.0
UNCORRECTED = (fake_libnvml.UNCORRECTED, fake_libnvml.VOLATILE)
CORRECTED = (fake_libnvml.CORRECTED, fake_libnvml.VOLATILE)


@pytest.fixture
def clock(monkeypatch):
    """nvml_xid's clock, moved by the test."""
    now = [NOW]
    monkeypatch.setattr(nvml_xid, '_now', lambda: now[0])
    return now


def _check(address=GPU):
    findings = health.Findings()
    nvml.check(address, findings)
    return findings.result()


def _release(source):
    return tuple(int(part) for part in source.version.split('.'))


# --- the harness: pynvml's own wrappers over the fake library -------------

def test_the_wrappers_reach_the_fake_library(libnvml, real_pynvml):
    libnvml.gpu(GPU, name='Tesla T4', memory=(15 << 30, 1 << 30))
    real_pynvml.nvmlInit()
    handle = real_pynvml.nvmlDeviceGetHandleByPciBusId(b'0000:5E:00.0')
    name = real_pynvml.nvmlDeviceGetName(handle)
    assert name in ('Tesla T4', b'Tesla T4')
    bus_id = real_pynvml.nvmlDeviceGetPciInfo(handle).busId
    assert bus_id in ('00000000:5E:00.0', b'00000000:5E:00.0')
    memory = real_pynvml.nvmlDeviceGetMemoryInfo(handle)
    assert (memory.total, memory.used) == (15 << 30, 1 << 30)
    if hasattr(real_pynvml, 'nvmlMemory_v2'):
        memory = real_pynvml.nvmlDeviceGetMemoryInfo(
            handle, real_pynvml.nvmlMemory_v2)
        assert (memory.reserved + memory.used, memory.free) == (
            1 << 30, 14 << 30)
    assert real_pynvml.nvmlDeviceGetCount() == 1
    real_pynvml.nvmlShutdown()
    assert libnvml.inits == 0


def test_errors_come_back_as_pynvml_names_them(libnvml, real_pynvml,
                                               pynvml_source):
    real_pynvml.nvmlInit()
    with pytest.raises(real_pynvml.NVMLError) as found:
        real_pynvml.nvmlDeviceGetHandleByPciBusId(b'0000:99:00.0')
    assert found.value.value == real_pynvml.NVML_ERROR_NOT_FOUND
    assert str(found.value) == 'Not Found'
    libnvml.lacks('nvmlDeviceGetPowerUsage')
    with pytest.raises(real_pynvml.NVMLError_FunctionNotFound):
        real_pynvml.nvmlDeviceGetPowerUsage(real_pynvml.c_nvmlDevice_t())
    # NOTE(tests): pynvml asks the library to word a code it lacks; the
    # releases before convertStrBytes show the bytes it gets.
    text = str(real_pynvml.NVMLError(25))
    if _release(pynvml_source) >= (11, 515, 48):
        assert text == 'Argument version mismatch'
    else:
        assert text == "b'Argument version mismatch'"


def test_only_newer_pynvml_takes_a_str_bus_id(libnvml, real_pynvml,
                                              pynvml_source):
    libnvml.gpu(GPU)
    real_pynvml.nvmlInit()
    if _release(pynvml_source) >= (11, 515, 48):
        assert real_pynvml.nvmlDeviceGetHandleByPciBusId(GPU)
    else:
        with pytest.raises(TypeError):
            real_pynvml.nvmlDeviceGetHandleByPciBusId(GPU)


# --- Cyborg's NVML checks -------------------------------------------------

def test_a_healthy_gpu(libnvml):
    libnvml.gpu(GPU)
    assert _check() == base.Health(base.OK, None, ('nvml',))


def test_a_gpu_nvml_does_not_know_is_not_judged(libnvml):
    libnvml.gpu('0000:af:00.0')
    assert _check() == base.Health(base.OK, None, ())
    assert nvml.sample(GPU) == {}


def test_uncorrected_volatile_ecc_errors_fail_the_gpu(libnvml):
    libnvml.gpu(GPU, ecc={CORRECTED: 10, UNCORRECTED: 2})
    assert _check() == base.Health(
        base.FAILED, 'NVML uncorrected ECC errors: 2', ('nvml',))


def test_pending_page_retirement_degrades_the_gpu(libnvml):
    libnvml.gpu(GPU, pending_pages=True)
    assert _check() == base.Health(
        base.DEGRADED, 'NVML: retired pages wait for a GPU reset',
        ('nvml',))


@pytest.mark.parametrize('rows, state, reason', [
    ((3, 1, 1, 0), base.DEGRADED, 'NVML: remapped rows wait for a GPU '
                                  'reset'),
    ((3, 1, 0, 1), base.FAILED, 'NVML: row remapping failed'),
    ((3, 1, 0, 0), base.OK, None)])
def test_row_remapping(libnvml, rows, state, reason):
    libnvml.gpu(GPU, remapped_rows=rows)
    assert _check() == base.Health(state, reason, ('nvml',))


def test_an_xid_79_fails_the_gpu_naming_it(libnvml, clock):
    libnvml.gpu(GPU)
    # NOTE(tests): before the first check registers the GPU, NVML keeps
    # no event for Cyborg.
    assert libnvml.xid(GPU, 79) == 0
    assert _check() == base.Health(base.OK, None, ('nvml',))
    assert libnvml.xid(GPU, 79) == 1
    assert _check() == base.Health(
        base.FAILED, 'NVML: Xid 79 (GPU has fallen off the bus) at '
        '2026-11-26T05:40:01Z', ('nvml',))
    assert nvml.sample(GPU)['xid_errors_total'] == 1.0
    assert set(libnvml.waits) == {0}


def test_an_xid_that_judges_nothing_is_counted_only(libnvml, clock):
    libnvml.gpu(GPU)
    _check()
    libnvml.xid(GPU, 13)
    assert _check() == base.Health(base.OK, None, ('nvml',))
    assert nvml.sample(GPU)['xid_errors_total'] == 1.0


def test_a_lost_gpu_fails_naming_the_xid_seen_before(libnvml, clock):
    gpu = libnvml.gpu(GPU)
    _check()
    libnvml.xid(GPU, 79)
    assert _check().state == base.FAILED
    gpu.lost = True
    found = _check()
    assert (found.state, found.sources) == (base.FAILED, ('nvml',))
    assert 'GPU is lost' in found.reason
    assert 'Xid 79 (GPU has fallen off the bus)' in found.reason


def test_a_lost_gpu_fails_naming_the_xid_that_came_with_it(libnvml, clock):
    gpu = libnvml.gpu(GPU)
    _check()
    # NOTE(tests): the Xid waits in the event set when the next check
    # finds the GPU gone.
    libnvml.xid(GPU, 79)
    gpu.lost = True
    found = _check()
    assert (found.state, found.sources) == (base.FAILED, ('nvml',))
    assert 'Xid 79 (GPU has fallen off the bus)' in found.reason
    assert libnvml.pending_events() == 0


def test_a_gpu_lost_before_it_was_watched_fails(libnvml, clock):
    libnvml.gpu(GPU, lost=True)
    found = _check()
    assert (found.state, found.sources) == (base.FAILED, ('nvml',))
    assert 'GPU is lost' in found.reason
    assert 'Xid' not in found.reason
    assert nvml.sample(GPU) == {}


def test_sample_in_series_units(libnvml):
    libnvml.gpu(GPU, utilization=(37, 12), memory=(16 << 30, 3 << 30),
                temperature=55, power_mw=41500,
                ecc={CORRECTED: 12, UNCORRECTED: 0})
    assert nvml.sample(GPU) == {
        'utilization_ratio': 0.37,
        'memory_used_bytes': float(3 << 30),
        'memory_total_bytes': float(16 << 30),
        'temperature_celsius': 55.0, 'power_watts': 41.5,
        'ecc_corrected_total': 12.0, 'ecc_uncorrected_total': 0.0,
        'xid_errors_total': 0.0}


def test_functions_the_library_lacks_cost_only_their_reading(libnvml):
    libnvml.gpu(GPU, remapped_rows=(0, 0, 0, 1), temperature=61)
    libnvml.lacks('nvmlDeviceGetRemappedRows', 'nvmlDeviceGetPowerUsage',
                  'nvmlDeviceGetUtilizationRates')
    assert _check() == base.Health(base.OK, None, ('nvml',))
    found = nvml.sample(GPU)
    assert found['temperature_celsius'] == 61.0
    assert not {'power_watts', 'utilization_ratio'} & set(found)


def test_a_library_without_events_judges_without_xids(libnvml):
    libnvml.gpu(GPU, ecc={CORRECTED: 0, UNCORRECTED: 3})
    libnvml.lacks('nvmlEventSetCreate')
    assert _check() == base.Health(
        base.FAILED, 'NVML uncorrected ECC errors: 3', ('nvml',))
    assert 'xid_errors_total' not in nvml.sample(GPU)


def test_calls_a_gpu_does_not_support_cost_only_their_reading(libnvml):
    libnvml.gpu(GPU, temperature=61, power_mw=70250, event_types=0x1,
                unsupported={'nvmlDeviceGetTotalEccErrors',
                             'nvmlDeviceGetRetiredPagesPendingStatus',
                             'nvmlDeviceGetRemappedRows',
                             'nvmlDeviceGetUtilizationRates'})
    assert _check() == base.Health(base.OK, None, ('nvml',))
    assert nvml.sample(GPU) == {'memory_used_bytes': 0.0,
                                'memory_total_bytes': float(16 << 30),
                                'temperature_celsius': 61.0,
                                'power_watts': 70.25}


def test_nvml_that_does_not_initialise_is_absent(libnvml):
    libnvml.gpu(GPU, ecc={CORRECTED: 0, UNCORRECTED: 3})
    libnvml.init_error = fake_libnvml.ERROR_DRIVER_NOT_LOADED
    assert nvml.library() is None
    assert _check() == base.Health(base.OK, None, ())
    assert libnvml.calls == ['nvmlInitWithFlags']


def test_forget_frees_the_event_set_and_shuts_nvml_down(libnvml):
    libnvml.gpu(GPU)
    _check()
    assert libnvml.inits == 1
    nvml.forget()
    assert libnvml.inits == 0
    assert libnvml.calls[-2:] == ['nvmlEventSetFree', 'nvmlShutdown']


def test_identity_reads_as_text(libnvml, pynvml_source):
    libnvml.gpu(GPU, name='Tesla T4', uuid='GPU-0e1a', serial='132402',
                vbios='90.04.96.00.02')
    found = nvml.identity(GPU)
    # NOTE(tests): the oldest pynvml is loaded from a cache, not from the
    # installed distribution, so Cyborg cannot name its release.
    assert found.pop('pynvml') in (pynvml_source.version, 'unknown')
    assert found == {'name': 'Tesla T4', 'uuid': 'GPU-0e1a',
                     'serial': '132402', 'vbios': '90.04.96.00.02',
                     'driver': '550.90.07', 'nvml': '12.550.90.07',
                     'cuda_driver': '12040'}


# --- the GPU driver on a fixture host -------------------------------------

def _gpu_host(tmp_path, override):
    root = pci_hosts.copy_host(nvidia_hosts.NAME, tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    driver = nvidia_gpu.NvidiaGpuDriver()
    return driver, pci_hosts.by_address(pci_hosts.discover(driver, root))


def test_the_gpu_driver_adds_nvml_to_its_sources(libnvml, tmp_path,
                                                  override):
    driver, devices = _gpu_host(tmp_path, override)
    libnvml.gpu(GPU, ecc={CORRECTED: 0, UNCORRECTED: 1})
    assert driver.health(devices[GPU]) == base.Health(
        base.FAILED, 'NVML uncorrected ECC errors: 1',
        ('pci', 'aer', 'link', 'nvml'))


def test_the_gpu_driver_fails_a_lost_gpu(libnvml, clock, tmp_path,
                                         override):
    driver, devices = _gpu_host(tmp_path, override)
    libnvml.gpu(GPU)
    assert driver.health(devices[GPU]).state == base.OK
    libnvml.xid(GPU, 79)
    libnvml.gpus[fake_libnvml.parse_bus_id(GPU)].lost = True
    found = driver.health(devices[GPU])
    assert found.state == base.FAILED
    assert 'Xid 79' in found.reason


def test_the_gpu_driver_without_nvml_runs_sysfs_checks(libnvml, tmp_path,
                                                        override):
    driver, devices = _gpu_host(tmp_path, override)
    libnvml.gpu(GPU, ecc={CORRECTED: 0, UNCORRECTED: 1})
    libnvml.init_error = fake_libnvml.ERROR_DRIVER_NOT_LOADED
    assert driver.health(devices[GPU]) == base.Health(
        base.OK, None, ('pci', 'aer', 'link'))
    assert 'utilization_ratio' not in driver.metrics(devices[GPU])


def test_the_gpu_driver_metrics_prefer_nvml(libnvml, tmp_path, override):
    driver, devices = _gpu_host(tmp_path, override)
    # NOTE(tests): the RTX 6000 of the fixture has a hwmon device.
    libnvml.gpu(nvidia_hosts.RTX, name='Quadro RTX 6000',
                pci_device_id=0x1E3010DE, utilization=(50, 10),
                memory=(24 << 30, 1 << 30), temperature=47, power_mw=30000)
    sample = driver.metrics(devices[nvidia_hosts.RTX])
    assert sample['temperature_celsius'] == 47.0
    assert sample['power_watts'] == 30.0
    assert sample['utilization_ratio'] == 0.5
    assert sample['memory_total_bytes'] == float(24 << 30)
    assert sample['aer_fatal_total'] == 0.0
