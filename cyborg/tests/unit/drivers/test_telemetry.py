"""Tests of telemetry sampling: the series and their sysfs readers."""

import os
import sys

import pytest

from cyborg.agent import resource_tracker
from cyborg.drivers import fake
from cyborg.drivers import intel_fpga
from cyborg.drivers import intel_qat
from cyborg.drivers import nvml
from cyborg.drivers import telemetry
from cyborg.drivers import tools
from cyborg.tests import sysfs_builder
from cyborg.tests.fixtures import mixed_host
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.fixtures import pcie_health

CARD = '0000:3b:00.0'


def test_the_series_are_exactly_these_in_this_order():
    assert list(telemetry.SERIES) == [
        'utilization_ratio', 'memory_used_bytes', 'memory_total_bytes',
        'temperature_celsius', 'power_watts', 'ecc_corrected_total',
        'ecc_uncorrected_total', 'xid_errors_total', 'aer_correctable_total',
        'aer_nonfatal_total', 'aer_fatal_total']
    kinds = {name: kind for name, (_help, kind) in telemetry.SERIES.items()}
    assert {n for n, k in kinds.items() if k == telemetry.COUNTER} == {
        n for n in kinds if n.endswith('_total')}
    assert set(kinds.values()) == {telemetry.GAUGE, telemetry.COUNTER}
    assert all(help_text.endswith('.') for help_text, _kind
               in telemetry.SERIES.values())


@pytest.fixture
def card(tmp_path):
    b = sysfs_builder.SysfsBuilder(str(tmp_path / 'sys'))
    ddir = b.pci(CARD, '0x1da3', '0x1000', '0x120000', driver='habanalabs')
    return b, ddir


def test_a_function_without_health_files_samples_nothing(card):
    _b, ddir = card
    assert telemetry.sample_pci(ddir) == {}


def test_aer_counts_are_the_total_lines(card):
    b, ddir = card
    pcie_health.pcie(b, CARD)
    pcie_health.write_aer(ddir, 'aer_dev_correctable',
                          {'Receiver Error': 5, 'Bad TLP': 2})
    pcie_health.write_aer(ddir, 'aer_dev_fatal', {'ECRC': 1})
    assert telemetry.sample_pci(ddir) == {
        'aer_correctable_total': 7.0, 'aer_nonfatal_total': 0.0,
        'aer_fatal_total': 1.0}


def test_temperature_is_the_hottest_sensor_in_celsius(card):
    b, ddir = card
    pcie_health.hwmon(b, ddir, 0, 'chip', temps=[(41500, None, None),
                                                 (63250, 90000, None)])
    pcie_health.hwmon(b, ddir, 1, 'other', temps=[(52000, None, None)])
    assert telemetry.sample_pci(ddir) == {'temperature_celsius': 63.25}


def test_power_prefers_the_average_and_reads_microwatts(card):
    b, ddir = card
    hdir = pcie_health.hwmon(b, ddir, 0, 'chip', power_uw=75500000)
    sysfs_builder.write(os.path.join(hdir, 'power1_input'), 80000000)
    assert telemetry.sample_pci(ddir) == {'power_watts': 75.5}
    os.remove(os.path.join(hdir, 'power1_average'))
    assert telemetry.sample_pci(ddir) == {'power_watts': 80.0}
    sysfs_builder.write(os.path.join(hdir, 'power1_input'), 'N/A')
    assert telemetry.sample_pci(ddir) == {}


def test_an_unreadable_sensor_is_left_out(card):
    b, ddir = card
    hdir = pcie_health.hwmon(b, ddir, 0, 'chip',
                             temps=[(41000, None, None)])
    sysfs_builder.write(os.path.join(hdir, 'temp1_input'), '')
    assert telemetry.sample_pci(ddir) == {}


def test_the_base_driver_samples_nothing():
    assert fake.FakeDriver().metrics(None) == {}


def test_the_dfl_card_reads_its_fme_hwmon(override):
    root = pci_hosts.committed('fpga-dfl-host')
    override('sysfs_root', root, group='agent')
    driver = intel_fpga.IntelFpgaDriver()
    devices = pci_hosts.by_address(pci_hosts.discover(driver, root))
    # NOTE(tests): the fixture's dfl_fme_thermal and dfl_fme_power.
    assert driver.metrics(devices['0000:3b:00.0']) == {
        'temperature_celsius': 52.0, 'power_watts': 68.0,
        'aer_correctable_total': 0.0, 'aer_nonfatal_total': 0.0,
        'aer_fatal_total': 0.0}
    # NOTE(tests): the N3000 on vfio-pci shows the host no FME.
    assert driver.metrics(devices['0000:d8:00.0']) == {
        'aer_correctable_total': 0.0, 'aer_nonfatal_total': 0.0,
        'aer_fatal_total': 0.0}


def test_a_gone_device_samples_nothing(tmp_path, override):
    root = pci_hosts.copy_host(mixed_host.NAME, tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    driver = intel_qat.IntelQatDriver()
    device = pci_hosts.discover(driver, root)[0]
    assert driver.metrics(device)
    os.remove(os.path.join(root, 'bus', 'pci', 'devices', '0000:3d:00.0'))
    assert driver.metrics(device) == {}


def test_every_series_a_driver_returns_is_a_known_one(override,
                                                      monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', None)
    nvml.forget()
    override('sysfs_root', pci_hosts.committed(mixed_host.NAME),
             group='agent')
    tracker = resource_tracker.ResourceTracker(
        'compute-1', ['nvidia_gpu_driver', 'intel_qat_driver',
                      'intel_fpga_driver', 'xilinx_fpga_driver'])
    host_report, failed = tracker.discover()
    assert failed == [] and host_report.devices
    samples = {}
    for device in host_report.devices:
        sample = tracker.driver_named(device.driver_name).metrics(device)
        assert set(sample) <= set(telemetry.SERIES), device
        assert all(isinstance(v, float) for v in sample.values())
        samples[tools.control_address(device)] = sample
    assert samples['0000:3b:00.0'] == {
        'temperature_celsius': 38.0, 'power_watts': 19.0,
        'aer_correctable_total': 0.0, 'aer_nonfatal_total': 0.0,
        'aer_fatal_total': 0.0}
    nvml.forget()
