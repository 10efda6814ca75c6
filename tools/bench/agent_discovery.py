"""Benchmark: discovery of a big simulated host, and the steady-state cost.

Builds a kernel-like sysfs tree with 128 accelerator cards (64 NVIDIA T4
GPUs and 64 Intel QAT C62x PFs with 8 VFs each: 512 VFs), then prints:

* the time of a full discovery pass (fresh sysfs scan, every driver),
* the SQL statements and writes of the conductor for the first report,
  for a report of an unchanged host (the heartbeat the agent sends), and
  for a whole report that changed nothing.

Usage: python tools/bench/agent_discovery.py [--passes N] [--db-url URL]
(SQLite in a temporary directory by default; MariaDB or PostgreSQL URLs
work too and must point at an empty database).
"""

import argparse
import statistics
import sys
import tempfile
import time

from oslo_config import cfg

import cyborg  # noqa: F401 (selects the threading backend)
from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.agent import resource_tracker
from cyborg.conductor import inventory
from cyborg.conductor import manager as conductor_manager
from cyborg.db import migration
from cyborg.db import services as service_queries
from cyborg.db import session
from cyborg.drivers import report
from cyborg.tests import sqlcount
from cyborg.tests import sysfs_builder

CONF = cfg.CONF
HOST = 'bench-host'
DRIVERS = ['nvidia_gpu_driver', 'intel_qat_driver']


def build_host(root, gpus=64, qat_pfs=64, vfs_per_pf=8):
    """The simulated host; returns the number of PCI functions written."""
    builder = sysfs_builder.SysfsBuilder(root)
    functions = 0
    for index in range(gpus):
        bus = 0x10 + index
        builder.pci('0000:%02x:00.0' % bus, '0x10de', '0x1eb8', '0x030200',
                    driver='nvidia', iommu_group=index,
                    numa_node=index % 2)
        functions += 1
    for index in range(qat_pfs):
        domain = '%04x' % (1 + index // 32)
        bus = 0x20 + (index % 32) * 4
        pf = '%s:%02x:00.0' % (domain, bus)
        builder.pci(pf, '0x8086', '0x37c8', '0x0b4000', driver='c6xx',
                    iommu_group=1000 + index, totalvfs=16,
                    numvfs=vfs_per_pf, numa_node=index % 2)
        builder.qat(pf, 'sym;asym')
        vfs = ['%s:%02x:%02x.%d' % (domain, bus + 1, slot // 8, slot % 8)
               for slot in range(vfs_per_pf)]
        builder.vfs(pf, vfs, '0x8086', '0x37c9', '0x0b4000',
                    driver='c6xxvf', first_iommu_group=2000 + index * 16)
        functions += 1 + vfs_per_pf
    return functions


def time_discovery(tracker, passes):
    times = []
    found = None
    for _ in range(passes):
        start = time.perf_counter()
        found, failed = tracker.discover()
        times.append((time.perf_counter() - start) * 1000)
        if failed:
            sys.exit('drivers failed: %s' % failed)
    return found, times


def count(engine, func):
    with sqlcount.StatementCounter(engine) as counter:
        func()
    return len(counter.statements), len(counter.writes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--passes', type=int, default=20)
    parser.add_argument('--db-url')
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix='cyborg-bench-')
    CONF([], project='cyborg', default_config_files=[])
    CONF.set_override('state_path', workdir)
    CONF.set_override('sysfs_root', workdir + '/sys', group='agent')
    CONF.set_override('enabled_vgpu_types', [], group='gpu_devices')
    CONF.set_override('connection', args.db_url or
                      'sqlite:///%s/bench.sqlite' % workdir,
                      group='database')
    objects.register_all()

    functions = build_host(workdir + '/sys')
    tracker = resource_tracker.ResourceTracker(HOST, DRIVERS)
    found, times = time_discovery(tracker, args.passes)
    deployables = sum(len(d.deployables) for d in found.devices)
    handles = sum(len(dep.attach_handles) for d in found.devices
                  for dep in d.deployables)
    print('Simulated host: %d PCI functions -> %d devices, %d deployables, '
          '%d attach handles' % (functions, len(found.devices), deployables,
                                 handles))
    print('Full discovery pass (%d passes): median %.1f ms, p90 %.1f ms, '
          'min %.1f ms' % (len(times), statistics.median(times),
                           sorted(times)[int(len(times) * 0.9) - 1],
                           min(times)))

    engine = session.get_engine()
    migration.upgrade('head', engine=engine)
    conductor_manager.bind_objects_to_database()
    ctx = cyborg_context.get_admin_context()
    first = report.HostReport.from_primitive(found.to_primitive())
    stmts, writes = count(engine, lambda: inventory.apply_report(
        ctx, first, generation=1))
    print('First report: %d SQL statements, %d writes' % (stmts, writes))
    stmts, writes = count(engine, lambda: service_queries.agent_heartbeat(
        ctx, HOST, inventory.AGENT_BINARY, 1))
    print('Unchanged host (agent heartbeat): %d SQL statements, %d writes '
          '(the liveness UPDATE), 0 inventory writes' % (stmts, writes))
    stmts, writes = count(engine, lambda: inventory.apply_report(
        ctx, first, generation=2))
    print('Whole report with nothing changed: %d SQL statements, %d writes '
          '(the generation UPDATE)' % (stmts, writes))


if __name__ == '__main__':
    main()
