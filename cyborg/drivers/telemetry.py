"""The telemetry series a driver samples, and their sysfs readers."""

# NOTE(telemetry): a driver's metrics(device) returns {name: value} with
# names of SERIES only, and only the series it could read on this pass:
# a missing series is "not known", never 0. Values are in the unit the
# name says (bytes, Celsius, watts, a ratio in 0..1); counters count
# since the kernel (AER) or the vendor driver (ECC) last started them, so
# a reader takes a drop as a reset. The agent's Prometheus endpoint and
# the API read these names and shapes.

import os
import re

from cyborg.drivers import health
from cyborg.drivers import sysfs

#: name -> (help text, 'gauge' or 'counter'), in the order they are shown.
SERIES = {
    'utilization_ratio': (
        'Share of the last sample period the device was busy, 0 to 1.',
        'gauge'),
    'memory_used_bytes': ('Device memory in use, in bytes.', 'gauge'),
    'memory_total_bytes': ('Device memory in all, in bytes.', 'gauge'),
    'temperature_celsius': (
        'Hottest temperature sensor of the device, in degrees Celsius.',
        'gauge'),
    'power_watts': ('Power the device draws, in watts.', 'gauge'),
    'ecc_corrected_total': (
        'Memory errors ECC corrected since the device driver started.',
        'counter'),
    'ecc_uncorrected_total': (
        'Memory errors ECC could not correct since the device driver '
        'started.', 'counter'),
    'xid_errors_total': (
        'NVIDIA Xid errors NVML reported since the agent began to watch '
        'the GPU.', 'counter'),
    'aer_correctable_total': (
        'PCIe errors corrected (AER ERR_COR) since the kernel found the '
        'device.', 'counter'),
    'aer_nonfatal_total': (
        'Uncorrectable non-fatal PCIe errors (AER ERR_NONFATAL) since the '
        'kernel found the device.', 'counter'),
    'aer_fatal_total': (
        'Uncorrectable fatal PCIe errors (AER ERR_FATAL) since the kernel '
        'found the device.', 'counter'),
}
GAUGE = 'gauge'
COUNTER = 'counter'

_AER_SERIES = {'fatal': 'aer_fatal_total', 'non-fatal': 'aer_nonfatal_total',
               'corrected': 'aer_correctable_total'}
_POWER = re.compile(r'^power(\d+)_(average|input)$')


def power_watts(hwmon_dir: str, findings: health.Findings) -> float | None:
    """Watts of the first power channel of one hwmon device that reads:
    ``power<i>_average`` before ``power<i>_input`` (both microwatts)."""
    found = []
    for name in sysfs.listdir(hwmon_dir):
        match = _POWER.match(name)
        if match:
            found.append((int(match.group(1)), match.group(2) != 'average',
                          name))
    for _index, _input, name in sorted(found):
        path = os.path.join(hwmon_dir, name)
        text = health.read_text(path, findings)
        if text is None:
            continue
        try:
            return int(text) / 1e6
        except ValueError:
            findings.unreadable(path, 'not a number: %r' % text[:40])
    return None


def sample_pci(fn_dir: str,
               hwmon_dirs: list[str] | None = None) -> dict[str, float]:
    """What sysfs tells of any PCI function: AER counts, the hottest
    temperature and the power of its hwmon devices.

    :param hwmon_dirs: the hwmon devices to read (default: those below
        the function, ``hwmon/hwmonN``).
    """
    findings = health.Findings()
    sample = {}
    for kind, total in health.aer_totals(fn_dir, findings).items():
        sample[_AER_SERIES[kind]] = float(total)
    dirs = health.hwmon_dirs(fn_dir) if hwmon_dirs is None else hwmon_dirs
    temps = [value for hwmon_dir in dirs
             for _i, value, _max, _crit in health.temperatures(hwmon_dir,
                                                               findings)]
    if temps:
        sample['temperature_celsius'] = max(temps) / 1000
    for hwmon_dir in dirs:
        watts = power_watts(hwmon_dir, findings)
        if watts is not None:
            sample['power_watts'] = watts
            break
    return only_series(sample)


def sample_device(device,
                  hwmon_dirs: list[str] | None = None) -> dict[str, float]:
    """``sample_pci`` of the function controlling ``device``; {} when it
    is gone."""
    fn_dir = health.function_dir(health.control_address(device))
    if not os.path.isdir(fn_dir):
        return {}
    return sample_pci(fn_dir, hwmon_dirs)


def only_series(sample: dict) -> dict[str, float]:
    """``sample`` restricted to the names of SERIES, in SERIES order, as
    floats."""
    return {name: float(sample[name]) for name in SERIES if name in sample}
