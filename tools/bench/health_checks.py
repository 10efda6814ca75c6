"""Benchmark: what the device health checks and telemetry add to a report.

Runs the drivers over the biggest committed fixture host, the
two-socket-host (86 PCI functions; ``--tiny``: the mixed-host, 16), once,
then times per report, over ``--passes`` passes, what the agent does for
every device of it on every report interval:

* the health checks (``driver.health`` of every device: the function
  answers, AER counters, link, hwmon temperatures, QAT state, DFL FME
  errors), against the ``pci`` check alone that earlier releases ran, the
  difference being what the health checks added;
* the telemetry sample (``driver.metrics`` of every device).

It prints median / p95 / min milliseconds per report of each, whether
the added cost meets the target (median <= 5 ms per report), the states
found (every fixture device is healthy), and that a fatal AER count
written into a copy of the tree makes its device failed, so the timed
checks are the ones that find faults.

Usage: python tools/bench/health_checks.py [--passes N] [--tiny]
[--dir DIR]. Exits 1 when a driver fails, when a fixture device is not
healthy, or when the written fault is not found; the timing target is
only reported.
"""

import argparse
import os
import shlex
import statistics
import sys
import time

# NOTE(bench): helpers beside this script (its directory is on sys.path).
import _timing
import _workdir
from oslo_config import cfg

import cyborg  # noqa: F401 (selects the threading backend)
from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg.agent import resource_tracker
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import nvml
from cyborg.drivers import tools
from cyborg.tests.fixtures import mixed_host
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.fixtures import pcie_health
from cyborg.tests.fixtures import two_socket_host

CONF = cfg.CONF
HOST = 'bench-host'
TARGET_MS = 5.0
DRIVERS = ['nvidia_gpu_driver', 'intel_fpga_driver', 'xilinx_fpga_driver',
           'intel_qat_driver', 'huawei_ascend_driver', 'pci_driver']
NVME_SPEC = '{"vendor_id": "144d", "product_id": "a808"}'


def percentiles(times):
    return _timing.percentiles(times, 0.95, 3)


def configure(root):
    CONF([], project='cyborg', default_config_files=[])
    CONF.set_override('sysfs_root', root, group='agent')
    CONF.set_override('device_spec', [NVME_SPEC], group='pci')
    # NOTE(bench): NVML is not what is measured (and no GPU is here).
    CONF.set_override('use_nvml', False, group='health')
    nvml.forget()


def devices_of(tracker):
    """``[(driver, device)]`` of one discovery pass."""
    host_report, failed = tracker.discover()
    if failed:
        sys.exit('FAILED: drivers failed: %s' % ', '.join(failed))
    by_name = {driver.name: driver for driver in tracker.drivers.values()}
    return [(by_name[device.driver_name], device)
            for device in host_report.devices]


def time_passes(passes, found, call):
    """ms per pass of ``call(driver, device)`` over every device."""
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        for driver, device in found:
            call(driver, device)
        times.append((time.perf_counter() - start) * 1000)
    return times


def sick_device_found(host, workdir):
    """Write an AER fatal count into a copy of the tree; is the first
    device with AER counters then failed?"""
    root = pci_hosts.copy_host(host, os.path.join(workdir, 'sys'))
    CONF.set_override('sysfs_root', root, group='agent')
    try:
        found = devices_of(resource_tracker.ResourceTracker(HOST, DRIVERS))
        for driver, device in found:
            fn_dir = health.function_dir(tools.control_address(device))
            if os.path.exists(os.path.join(fn_dir, 'aer_dev_fatal')):
                pcie_health.write_aer(fn_dir, 'aer_dev_fatal',
                                      {'Surprise Down Error': 1})
                judged = driver.health(device)
                return (judged.state == base.FAILED and
                        'AER fatal errors: 1' in (judged.reason or ''))
        return False
    finally:
        CONF.clear_override('sysfs_root', group='agent')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--passes', type=int, default=200,
                        help='reports to time (default 200)')
    parser.add_argument('--tiny', action='store_true',
                        help='the mixed-host (16 functions) instead of the '
                             'two-socket-host (the test suite runs it so)')
    parser.add_argument('--dir', help='where the temporary copy goes '
                                      '(default: the system\'s temp dir)')
    args = parser.parse_args()
    if args.passes < 1:
        parser.error('--passes must be at least 1')
    return _workdir.run_in_tempdir(run, args)


def run(args, workdir):
    host = mixed_host.NAME if args.tiny else two_socket_host.NAME
    root = pci_hosts.committed(host)
    configure(root)
    tracker = resource_tracker.ResourceTracker(HOST, DRIVERS)
    found = devices_of(tracker)
    functions = len(os.listdir(os.path.join(root, 'bus', 'pci', 'devices')))
    print('Fixture host: %s, %d PCI functions -> %d devices' % (
        host, functions, len(found)))
    print('Drivers: %s' % ', '.join(DRIVERS))
    states = {}
    sources = set()
    for driver, device in found:
        judged = driver.health(device)
        states[judged.state] = states.get(judged.state, 0) + 1
        sources.update(judged.sources)
    print('States: %s; sources that ran: %s' % (
        ', '.join('%s %d' % item for item in sorted(states.items())),
        ', '.join(s for s in base.SOURCES if s in sources)))
    pci_only = time_passes(args.passes, found,
                           lambda _driver, device: tools.pci_health(device))
    checks = time_passes(args.passes, found,
                         lambda driver, device: driver.health(device))
    metrics = time_passes(args.passes, found,
                          lambda driver, device: driver.metrics(device))
    added = [c - p for c, p in zip(checks, pci_only, strict=True)]
    print('pci check alone, as before (%d reports): %s'
          % (args.passes, percentiles(pci_only)))
    print('Health checks (%d reports): %s' % (args.passes,
                                              percentiles(checks)))
    print('Added by the health checks per report: %s' % percentiles(added))
    print('Telemetry sample per report: %s' % percentiles(metrics))
    total = statistics.median(added) + statistics.median(metrics)
    print('Target (medians): health checks added + telemetry <= %.0f ms '
          'per report: %s (%.3f ms)' % (
              TARGET_MS, 'met' if total <= TARGET_MS else 'NOT met', total))
    healthy = set(states) == {base.OK}
    print('Every fixture device is healthy: %s' % ('yes' if healthy
                                                   else 'NO'))
    sick = sick_device_found(host, workdir)
    print('A fatal AER count written into a copy fails its device: %s'
          % ('yes' if sick else 'NO'))
    print('Command: %s' % shlex.join(['python'] + sys.argv))
    return 0 if healthy and sick else 1


if __name__ == '__main__':
    sys.exit(main())
