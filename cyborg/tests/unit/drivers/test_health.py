"""Tests of the sysfs health checks: every check, every state."""

import contextlib
import errno
import os
import random
import re

import pytest

from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import intel_fpga
from cyborg.drivers import intel_qat
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import pci
from cyborg.drivers import sysfs
from cyborg.drivers import telemetry
from cyborg.tests import damage_fuzz
from cyborg.tests.fixtures import accelerator_hosts
from cyborg.tests.fixtures import mixed_host
from cyborg.tests.fixtures import nvidia_hosts
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.fixtures import pcie_health

PORT, CARD = '0000:3a:00.0', '0000:3b:00.0'

# NOTE(tests): the sample output of Linux's Documentation/ABI/testing/
# sysfs-bus-pci-devices-aer, verbatim but for its indentation.
ABI_CORRECTABLE_SAMPLE = """Receiver Error 2
Bad TLP 0
Bad DLLP 0
RELAY_NUM Rollover 0
Replay Timer Timeout 0
Advisory Non-Fatal 0
Corrected Internal Error 0
Header Log Overflow 0
TOTAL_ERR_COR 2
"""
# NOTE(tests): what pci_speed_string() prints (drivers/pci/probe.c,
# pci_bus_speed_strings), and the older "%s GT/s" form of pci-sysfs.c.
KERNEL_SPEEDS = {'2.5 GT/s PCIe': 2.5, '5.0 GT/s PCIe': 5.0,
                 '8.0 GT/s PCIe': 8.0, '16.0 GT/s PCIe': 16.0,
                 '32.0 GT/s PCIe': 32.0, '64.0 GT/s PCIe': 64.0,
                 '8 GT/s': 8.0, 'Unknown': None, 'Unknown speed': None}


@pytest.fixture
def card(tmp_path, override):
    """A Gen4 x16 card behind a Gen4 x16 root port, with one hwmon
    device; returns (builder, card dir, report device)."""
    root = str(tmp_path / 'sys')
    b = accelerator_hosts.Builder(root)
    b.bridge(PORT, '0x8086', '0x2030', '3b', driver='pcieport')
    b.pci(CARD, '0x1da3', '0x1000', '0x120000', driver='habanalabs')
    sysfs_builder_write(b.device_dir(PORT), 'max_link_speed',
                        pcie_health.GEN4)
    sysfs_builder_write(b.device_dir(PORT), 'max_link_width', 16)
    card_dir = pcie_health.pcie(b, CARD, pcie_health.GEN4, 16)
    pcie_health.hwmon(b, card_dir, 0, 'habanalabs',
                      temps=[(45000, 90000, 100000), (50000, None, None)])
    override('sysfs_root', root, group='agent')
    fn = sysfs.Sysfs(root).pci_function(CARD)
    return b, card_dir, pci.device(fn, 'AICHIP', 'Gaudi', [], 'test')


def sysfs_builder_write(directory, name, value):
    with open(os.path.join(directory, name), 'w') as out:
        out.write('%s\n' % value)


def _check(device, **kwargs):
    return health.check_device(device, **kwargs)


def test_a_healthy_card_runs_every_check_that_applies(card):
    _b, _dir, device = card
    found = _check(device)
    assert found == base.Health(base.OK, None,
                                ('pci', 'aer', 'link', 'hwmon'))
    assert found.ok
    assert _check(device) == found


def test_the_abi_sample_of_aer_reads_its_total():
    assert health.aer_total(ABI_CORRECTABLE_SAMPLE, 'TOTAL_ERR_COR') == 2
    with pytest.raises(ValueError):
        health.aer_total(ABI_CORRECTABLE_SAMPLE, 'TOTAL_ERR_FATAL')


@pytest.mark.parametrize('text, gts', sorted(KERNEL_SPEEDS.items()))
def test_link_speeds_read_as_the_kernel_prints_them(text, gts):
    assert health.parse_speed(text) == gts


def test_a_fatal_aer_error_fails_the_card(card):
    _b, card_dir, device = card
    pcie_health.write_aer(card_dir, 'aer_dev_fatal',
                          {'Surprise Down Error': 1, 'Poisoned TLP': 1})
    found = _check(device)
    assert (found.state, found.reason) == (base.FAILED,
                                           'AER fatal errors: 2')
    assert not found.ok


def test_a_nonfatal_aer_error_degrades_the_card(card):
    _b, card_dir, device = card
    pcie_health.write_aer(card_dir, 'aer_dev_nonfatal',
                          {'Completion Timeout': 3})
    found = _check(device)
    assert (found.state, found.reason) == (base.DEGRADED,
                                           'AER non-fatal errors: 3')
    assert found.ok


@pytest.mark.parametrize('threshold, state', [
    (0, base.OK), (12, base.DEGRADED), (13, base.OK)])
def test_corrected_aer_errors_degrade_from_the_threshold(
        card, override, threshold, state):
    _b, card_dir, device = card
    pcie_health.write_aer(card_dir, 'aer_dev_correctable',
                          {'Receiver Error': 12})
    override('aer_correctable_threshold', threshold, group='health')
    assert _check(device).state == state


def test_a_function_without_aer_skips_the_check(card):
    _b, card_dir, device = card
    for name in pcie_health.AER_FILES:
        os.remove(os.path.join(card_dir, name))
    found = _check(device)
    assert found.state == base.OK and 'aer' not in found.sources


def test_malformed_aer_files_cost_only_their_check(card):
    _b, card_dir, device = card
    for name in pcie_health.AER_FILES:
        sysfs_builder_write(card_dir, name, 'Undefined 0')
    sysfs.forget_logged()
    found = _check(device)
    assert found == base.Health(base.OK, None, ('pci', 'link', 'hwmon'))


def test_a_narrower_link_degrades_the_card(card):
    _b, card_dir, device = card
    sysfs_builder_write(card_dir, 'current_link_width', 8)
    found = _check(device)
    assert (found.state, found.reason) == (base.DEGRADED,
                                           'PCIe link x8 of x16')


def test_a_slower_link_degrades_the_card_unless_speed_is_not_judged(
        card, override):
    _b, card_dir, device = card
    sysfs_builder_write(card_dir, 'current_link_speed', pcie_health.GEN3)
    found = _check(device)
    assert (found.state, found.reason) == (base.DEGRADED,
                                           'PCIe link 8 GT/s of 16 GT/s')
    assert _check(device, link_speed=False).state == base.OK
    override('check_link_speed', False, group='health')
    assert _check(device).state == base.OK


def test_a_link_is_judged_against_the_port_above_it(card):
    b, card_dir, device = card
    # NOTE(tests): a Gen4 card in a Gen3 slot trains at Gen3: that is
    # all the link can do, not a fault.
    sysfs_builder_write(b.device_dir(PORT), 'max_link_speed',
                        pcie_health.GEN3)
    sysfs_builder_write(card_dir, 'current_link_speed', pcie_health.GEN3)
    assert _check(device) == base.Health(
        base.OK, None, ('pci', 'aer', 'link', 'hwmon'))


def test_an_unknown_link_speed_is_not_judged(card):
    _b, card_dir, device = card
    sysfs_builder_write(card_dir, 'current_link_speed', 'Unknown')
    assert _check(device).state == base.OK


def test_a_function_without_link_files_skips_the_check(card):
    _b, card_dir, device = card
    for name in ('current_link_speed', 'current_link_width',
                 'max_link_speed', 'max_link_width'):
        os.remove(os.path.join(card_dir, name))
    assert 'link' not in _check(device).sources


@pytest.mark.parametrize('value, state, reason', [
    (89999, base.OK, None),
    (90000, base.DEGRADED, 'hwmon0/temp1 90 C at or above max 90 C'),
    (99500, base.DEGRADED, 'hwmon0/temp1 99.5 C at or above max 90 C'),
    (100000, base.FAILED, 'hwmon0/temp1 100 C at or above crit 100 C'),
])
def test_temperatures_against_their_limits(card, value, state, reason):
    _b, card_dir, device = card
    sysfs_builder_write(os.path.join(card_dir, 'hwmon', 'hwmon0'),
                        'temp1_input', value)
    found = _check(device)
    assert (found.state, found.reason) == (state, reason)


def test_a_limit_the_chip_did_not_set_is_ignored(card):
    _b, card_dir, device = card
    hdir = os.path.join(card_dir, 'hwmon', 'hwmon0')
    sysfs_builder_write(hdir, 'temp1_max', 0)
    sysfs_builder_write(hdir, 'temp1_input', 95000)
    assert _check(device).state == base.OK


def test_a_gone_card_fails_and_nothing_else_runs(card):
    b, _dir, device = card
    os.remove(b.path('bus', 'pci', 'devices', CARD))
    assert _check(device) == base.Health(
        base.FAILED, 'PCI function %s is gone from sysfs' % CARD, ('pci',))


def test_an_unbound_function_degrades_a_card_that_needs_its_driver(card):
    b, card_dir, device = card
    os.remove(os.path.join(card_dir, 'driver'))
    assert _check(device).state == base.OK
    found = _check(device, needs_driver=True)
    assert (found.state, found.reason) == (
        base.DEGRADED, '%s is bound to no driver' % CARD)


def test_the_worst_state_wins_and_leads_the_reason(card):
    _b, card_dir, device = card
    sysfs_builder_write(card_dir, 'current_link_width', 4)
    pcie_health.write_aer(card_dir, 'aer_dev_fatal', {'ECRC': 1})
    found = _check(device)
    assert (found.state, found.reason) == (
        base.FAILED, 'AER fatal errors: 1; PCIe link x4 of x16')


def test_a_reason_is_one_line_of_at_most_255_characters():
    findings = health.Findings()
    for index in range(40):
        findings.found(base.DEGRADED, 'hwmon', 'sensor %d\nis hot' % index)
    reason = findings.result().reason
    assert len(reason) == health.MAX_REASON and '\n' not in reason
    assert reason.endswith('...')


def test_unknown_only_when_no_check_could_read_anything(tmp_path):
    findings = health.Findings()
    findings.unreadable(str(tmp_path / 'aer_dev_fatal'), 'unreadable')
    found = findings.result()
    assert found.state == base.UNKNOWN and found.ok
    assert 'aer_dev_fatal' in found.reason
    findings.ran('pci')
    assert findings.result() == base.Health(base.OK, None, ('pci',))


def test_health_takes_the_flag_of_earlier_releases():
    assert base.Health(False, 'down').state == base.FAILED
    assert base.Health(True).state == base.OK
    assert base.Health(base.DEGRADED, 'slow').ok
    assert base.HEALTHY == base.Health()
    with pytest.raises(ValueError):
        base.Health('sick')


# --- QAT and DFL, and the drivers on the committed trees. ---------------

def _host(tmp_path, override, name):
    root = pci_hosts.copy_host(name, tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    return root


def _fn_dir(root, address):
    return os.path.join(root, 'bus', 'pci', 'devices', address)


def test_qat_state_down_fails_the_pf(tmp_path, override):
    root = _host(tmp_path, override, mixed_host.NAME)
    driver = intel_qat.IntelQatDriver()
    device = pci_hosts.by_address(pci_hosts.discover(driver, root))[
        '0000:3d:00.0']
    assert driver.health(device) == base.Health(
        base.OK, None, ('pci', 'aer', 'link', 'qat'))
    sysfs_builder_write(os.path.join(_fn_dir(root, '0000:3d:00.0'), 'qat'),
                        'state', 'down')
    found = driver.health(device)
    assert (found.state, found.reason) == (base.FAILED, 'QAT state down')


def test_a_qat_pf_with_vfs_needs_its_driver(tmp_path, override):
    root = _host(tmp_path, override, mixed_host.NAME)
    driver = intel_qat.IntelQatDriver()
    device = pci_hosts.by_address(pci_hosts.discover(driver, root))[
        '0000:3d:00.0']
    os.remove(os.path.join(_fn_dir(root, '0000:3d:00.0'), 'driver'))
    assert driver.health(device).state == base.DEGRADED


def _dfl_card(tmp_path, override):
    root = _host(tmp_path, override, 'fpga-dfl-host')
    driver = intel_fpga.IntelFpgaDriver()
    device = pci_hosts.by_address(pci_hosts.discover(driver, root))[
        '0000:3b:00.0']
    fme = os.path.join(_fn_dir(root, '0000:3b:00.0'), 'fpga_region',
                       'region0', 'dfl-fme.0')
    return driver, device, fme


@pytest.mark.parametrize('name, state', [
    ('catfatal_errors', base.FAILED), ('nonfatal_errors', base.DEGRADED),
    ('fme_errors', base.DEGRADED), ('pcie0_errors', base.DEGRADED),
    ('pcie1_errors', base.DEGRADED)])
def test_dfl_fme_errors(tmp_path, override, name, state):
    driver, device, fme = _dfl_card(tmp_path, override)
    assert driver.health(device) == base.Health(
        base.OK, None, ('pci', 'aer', 'link', 'hwmon', 'dfl'))
    sysfs_builder_write(os.path.join(fme, 'errors'), name, '0x20')
    found = driver.health(device)
    assert (found.state, found.reason) == (
        state, 'dfl-fme.0 %s 0x20' % name)


def test_dfl_errors_that_are_not_hex_cost_only_their_file(tmp_path,
                                                          override):
    driver, device, fme = _dfl_card(tmp_path, override)
    sysfs_builder_write(os.path.join(fme, 'errors'), 'catfatal_errors',
                        'garbage')
    found = driver.health(device)
    assert found.state == base.OK and 'dfl' in found.sources


def test_the_dfl_fme_temperature_is_judged(tmp_path, override):
    driver, device, fme = _dfl_card(tmp_path, override)
    sysfs_builder_write(os.path.join(fme, 'hwmon', 'hwmon0'),
                        'temp1_input', 101000)
    found = driver.health(device)
    assert (found.state, found.reason) == (
        base.FAILED, 'hwmon0/temp1 101 C at or above crit 100 C')


def test_a_fatal_aer_count_fails_a_gpu_of_the_nvidia_fixture(tmp_path,
                                                             override):
    # NOTE(tests): what the functional tests do to a copy of the tree.
    root = _host(tmp_path, override, nvidia_hosts.NAME)
    driver = nvidia_gpu.NvidiaGpuDriver()
    devices = pci_hosts.by_address(pci_hosts.discover(driver, root))
    assert {addr: driver.health(dev).state
            for addr, dev in devices.items()} == dict.fromkeys(devices,
                                                                base.OK)
    pcie_health.write_aer(_fn_dir(root, nvidia_hosts.T4_FRESH),
                          'aer_dev_fatal', {'Malformed TLP': 1})
    found = driver.health(devices[nvidia_hosts.T4_FRESH])
    assert (found.state, found.reason) == (base.FAILED,
                                           'AER fatal errors: 1')
    assert driver.health(devices[nvidia_hosts.T4_BUSY]).state == base.OK


def test_a_gpu_link_is_judged_by_width_only(tmp_path, override):
    root = _host(tmp_path, override, nvidia_hosts.NAME)
    driver = nvidia_gpu.NvidiaGpuDriver()
    device = pci_hosts.by_address(pci_hosts.discover(driver, root))[
        nvidia_hosts.T4_FRESH]
    # NOTE(tests): an idle GPU lowers its link speed; a lost lane is a
    # fault whatever the load.
    sysfs_builder_write(_fn_dir(root, nvidia_hosts.T4_FRESH),
                        'current_link_speed', '2.5 GT/s PCIe')
    assert driver.health(device).state == base.OK
    sysfs_builder_write(_fn_dir(root, nvidia_hosts.T4_FRESH),
                        'current_link_width', 8)
    assert driver.health(device).reason == 'PCIe link x8 of x16'


def test_every_fixture_device_is_healthy_by_default(override):
    # NOTE(tests): the fixture builders that write health files; the
    # 4xxx host's 0000:75:00.0 is down on purpose.
    for name, address, driver_cls in (
            (nvidia_hosts.NAME, None, nvidia_gpu.NvidiaGpuDriver),
            (mixed_host.NAME, None, nvidia_gpu.NvidiaGpuDriver),
            (mixed_host.NAME, None, intel_qat.IntelQatDriver),
            (mixed_host.NAME, None, intel_fpga.IntelFpgaDriver),
            ('fpga-dfl-host', None, intel_fpga.IntelFpgaDriver),
            ('qat-4xxx-host', '0000:75:00.0', intel_qat.IntelQatDriver)):
        root = pci_hosts.committed(name)
        override('sysfs_root', root, group='agent')
        driver = driver_cls()
        for found, device in pci_hosts.by_address(
                pci_hosts.discover(driver, root)).items():
            state = driver.health(device).state
            assert state == (base.FAILED if found == address
                             else base.OK), (name, found)


# --- Damaged trees. ------------------------------------------------------

_HEALTH_FILE = re.compile(
    r'^(aer_dev_\w+|(current|max)_link_(speed|width)|temp\d+_\w+|'
    r'power\d+_\w+|state|\w+_errors?|hwmon\d*|errors)$')


@pytest.mark.parametrize('how', damage_fuzz.DAMAGE)
def test_damaged_health_files_never_raise(tmp_path, override, how):
    # NOTE(tests): the damage fuzz's kinds of damage, done to every file
    # the checks and the telemetry read; a check may then find a fault
    # (a garbled count can read as a number) but never raises, and says
    # what it found within the column's size.
    rng = random.Random(how)
    for name, classes in (
            ('fpga-dfl-host', (intel_fpga.IntelFpgaDriver,)),
            (mixed_host.NAME, (nvidia_gpu.NvidiaGpuDriver,
                               intel_qat.IntelQatDriver,
                               intel_fpga.IntelFpgaDriver))):
        root = pci_hosts.copy_host(name, tmp_path / how / name)
        override('sysfs_root', root, group='agent')
        found = [(driver, device) for driver in (cls() for cls in classes)
                 for device in pci_hosts.discover(driver, root)]
        unreadable = damage_fuzz.Unreadable()
        damaged = 0
        for dirpath, dirnames, filenames in os.walk(
                os.path.join(root, 'devices'), topdown=False):
            for entry in filenames + dirnames:
                path = os.path.join(dirpath, entry)
                if _HEALTH_FILE.match(entry) and os.path.lexists(path):
                    damage_fuzz._apply(path, how, rng, unreadable)
                    damaged += 1
        assert damaged >= 20, (name, damaged)
        try:
            with unreadable.enforced(), _os_open_denied(unreadable):
                for driver, device in found:
                    judged = driver.health(device)
                    assert judged.state in base.STATES
                    assert len(judged.reason or '') <= health.MAX_REASON
                    assert set(driver.metrics(device)) <= set(
                        telemetry.SERIES)
        finally:
            damage_fuzz._restore_modes(root)


@contextlib.contextmanager
def _os_open_denied(unreadable):
    """os.open refuses ``unreadable``'s paths too (sysfs.read_value)."""
    real_open = os.open

    def guarded_open(path, *args, **kwargs):
        if unreadable.denied(path):
            raise PermissionError(errno.EACCES, 'Permission denied', path)
        return real_open(path, *args, **kwargs)

    os.open = guarded_open
    try:
        yield
    finally:
        os.open = real_open
