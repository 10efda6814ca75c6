"""Benchmark: discovery of a realistic host, full and unchanged, and its SQL.

Builds a kernel-like sysfs tree of about 200 PCI functions (``--tiny``: 15)
with the cards of a busy compute node: Tesla T4 GPUs offering vGPU
types on the GPU, A10 GPUs offering them on their SR-IOV VFs, QuickAssist
PFs with VFs, Intel PAC and Xilinx Alveo FPGAs, NVMe drives the generic
PCI driver claims, and the bridges, NICs and chipset functions a server
shows besides. With the five hardware drivers enabled it prints:

* a full discovery pass: a new tracker (so an empty discovery cache) and a
  fresh sysfs scan, median / p90 / min over ``--passes`` passes;
* an unchanged re-discovery: the next passes of one tracker, which the
  discovery cache answers after its fingerprint of the tree (health checks
  still run), and whether they equal the full pass's report; once with
  the tree fingerprinted by the rules of sysfs, as the agent does on a
  real host (the targets are judged on these), once by those of a fixture
  tree, which also stat every function's files;
* the conductor's SQL statements and writes for the first report, for an
  unchanged host (the agent's heartbeat) and for a whole report that
  changed nothing.

Usage: python tools/bench/agent_discovery.py [--passes N] [--tiny]
[--profile] [--db-url URL] [--dir DIR]
(SQLite in a temporary directory by default; MariaDB or PostgreSQL URLs
must point at an empty database). Exits 1 when a driver fails, when a
cached pass differs from a full one, or when the heartbeat is refused;
the timing targets are only reported.
"""

import argparse
import cProfile
import dataclasses
import io
import json
import os
import pstats
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
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.agent import fingerprint
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
DRIVERS = ['nvidia_gpu_driver', 'intel_qat_driver', 'intel_fpga_driver',
           'xilinx_fpga_driver', 'pci_driver']
NVME_SPEC = ('{"vendor_id": "144d", "product_id": "a808", '
             '"resource_class": "CUSTOM_NVME", "traits": "NVME_GEN3"}')
TARGET_FULL_MS = 100
TARGET_UNCHANGED_MS = 20

T4 = ('0x10de', '0x1eb8')
A10 = ('0x10de', '0x2236')
QAT_PF, QAT_VF = ('0x8086', '0x37c8'), ('0x8086', '0x37c9')
PAC_A10, PAC_A10_VF = ('0x8086', '0x09c4'), ('0x8086', '0x09c5')
U250_MGMT, U250_USER = ('0x10ee', '0x5004'), ('0x10ee', '0x5005')
NVME = ('0x144d', '0xa808')
X710 = ('0x8086', '0x1572')
DISPLAY_3D, QAT_CLASS, ACCELERATOR = '0x030200', '0x0b4000', '0x120000'
#: Functions of a server's chipset and uncore: (ids, class code).
PLATFORM = [(('0x8086', '0x2020'), '0x060000'),   # host bridge
            (('0x8086', '0x2030'), '0x060400'),   # root port
            (('0x8086', '0xa1d2'), '0x010601'),   # SATA controller
            (('0x8086', '0xa1af'), '0x0c0330'),   # USB controller
            (('0x8086', '0xa1a3'), '0x0c0500'),   # SMBus
            (('0x8086', '0x2054'), '0x088000')]   # uncore system peripheral
T4_PROFILES = ['1B', '2B', '2B4', '1A', '2A', '4A', '8A', '16A', '1Q', '2Q',
               '4Q', '8Q', '16Q', '4C', '8C', '16C', '1B4', '2A4']
A10_PROFILES = ['4Q', '6Q', '12Q', '24Q', '4C', '6C', '12C', '24C']


@dataclasses.dataclass
class Sizes:
    """How many of each card the simulated host has."""

    t4s: int = 4
    t4_types: int = 18
    a10s: int = 2
    a10_vfs: int = 16
    a10_types: int = 4
    qats: int = 4
    qat_vfs: int = 16
    pacs: int = 2
    pac_vfs: int = 2
    alveos: int = 2
    nvmes: int = 4
    nics: int = 8
    platform: int = 72


TINY = Sizes(t4s=1, t4_types=2, a10s=1, a10_vfs=2, a10_types=2, qats=1,
             qat_vfs=2, pacs=1, pac_vfs=1, alveos=1, nvmes=1, nics=1,
             platform=2)


class Host:
    """Writes the simulated host and counts what it wrote."""

    def __init__(self, root):
        self.b = sysfs_builder.SysfsBuilder(root)
        self.functions = self.vfs = self.mdev_types = 0
        self._bus = 0x10
        self._group = 0

    def _next_bus(self):
        self._bus += 1
        return '0000:%02x' % self._bus

    def pci(self, address, ids, class_code, **kwargs):
        self._group += 1
        self.functions += 1
        return self.b.pci(address, *ids, class_code,
                          iommu_group=self._group, **kwargs)

    def with_vfs(self, pf, count, ids, class_code, driver):
        bus = pf.rsplit(':', 1)[0]
        # NOTE(bench): the first VFs take the PF slot's free functions,
        # as Ampere GPUs and QAT cards lay them out.
        vfs = ['%s:%02x.%d' % (bus, (4 + i) // 8, (4 + i) % 8)
               for i in range(count)]
        self.b.vfs(pf, vfs, *ids, class_code, driver=driver,
                   first_iommu_group=self._group + 1)
        self._group += count
        self.functions += count
        self.vfs += count
        return vfs

    def mdev_type(self, address, type_id, name, available, framebuffer,
                  max_instance, created=0):
        self.b.mdev_type(
            address, type_id, name, available, created=created,
            description='num_heads=4, frl_config=60, framebuffer=%dM, '
                        'max_resolution=5120x2880, max_instance=%d'
                        % (framebuffer, max_instance))
        self.mdev_types += 1


def build_host(root, sizes):
    """The simulated host; returns its ``Host`` (what it counted)."""
    host = Host(root)
    for index in range(sizes.platform):
        ids, class_code = PLATFORM[index % len(PLATFORM)]
        host.pci('0000:%02x:%02x.%d' % (index // 64, index // 8 % 8,
                                        index % 8),
                 ids, class_code, driver='pcieport'
                 if class_code == '0x060400' else None)
    for _ in range(sizes.nics):
        host.pci(host._next_bus() + ':00.0', X710, '0x020000',
                 driver='i40e', totalvfs=64, numvfs=0)
    for _ in range(sizes.nvmes):
        host.pci(host._next_bus() + ':00.0', NVME, '0x010802',
                 driver='nvme', subsystem_device='0xa801')
    for index in range(sizes.t4s):
        gpu = host._next_bus() + ':00.0'
        host.pci(gpu, T4, DISPLAY_3D, driver='nvidia',
                 subsystem_device='0x12a2', revision='0xa1',
                 numa_node=index % 2)
        for number, profile in enumerate(T4_PROFILES[:sizes.t4_types]):
            used = index == 0 and number == 0
            host.mdev_type(gpu, 'nvidia-%d' % (222 + number),
                           'GRID T4-%s' % profile, 3 if used else 4,
                           4096, 4, created=int(used))
    for _ in range(sizes.a10s):
        gpu = host._next_bus() + ':00.0'
        host.pci(gpu, A10, DISPLAY_3D, driver='nvidia',
                 subsystem_device='0x1482', revision='0xa1', totalvfs=32)
        vfs = host.with_vfs(gpu, sizes.a10_vfs, A10, DISPLAY_3D, 'nvidia')
        for vf_index, vf in enumerate(vfs):
            for number, profile in enumerate(
                    A10_PROFILES[:sizes.a10_types]):
                used = vf_index == 0 and number == 0
                host.mdev_type(vf, 'nvidia-%d' % (592 + number),
                               'NVIDIA A10-%s' % profile,
                               0 if used else 1, 6144, 4,
                               created=int(used))
    for index in range(sizes.qats):
        pf = host._next_bus() + ':00.0'
        host.pci(pf, QAT_PF, QAT_CLASS, driver='c6xx', totalvfs=16,
                 revision='0x04')
        host.with_vfs(pf, sizes.qat_vfs, QAT_VF, QAT_CLASS, 'vfio-pci')
        host.b.qat(pf, ('sym;asym', 'dc')[index % 2])
    for index in range(sizes.pacs):
        pf = host._next_bus() + ':00.0'
        host.pci(pf, PAC_A10, ACCELERATOR, driver='intel-fpga-pci',
                 totalvfs=2)
        host.with_vfs(pf, sizes.pac_vfs, PAC_A10_VF, ACCELERATOR,
                      'vfio-pci')
        host.b.intel_fpga(pf, dev_index=index,
                          afu_id='d8424dc4a4a3c413f89e433683f9040b',
                          interface_id='69528db6-eb31-577a-8c36-'
                                       '68f9faa081f6')
    for _ in range(sizes.alveos):
        bus = host._next_bus()
        host.pci(bus + ':00.0', U250_MGMT, ACCELERATOR, driver='xclmgmt')
        host.pci(bus + ':00.1', U250_USER, ACCELERATOR, driver='xocl')
    return host


def age(root, seconds=3600):
    """Date the whole tree back, as on a host that has been up a while.

    NOTE(bench): a tree that is not sysfs and was written just now is not
    trusted by the discovery cache (a second write could share an mtime).
    """
    past = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.utime(os.path.join(dirpath, name), (past, past),
                     follow_symlinks=False)


def percentiles(times):
    return _timing.percentiles(times, 0.9, 1)


def _pass(tracker):
    start = time.perf_counter()
    found, failed = tracker.discover()
    elapsed = (time.perf_counter() - start) * 1000
    if failed:
        sys.exit('FAILED: drivers failed: %s' % ', '.join(failed))
    return found, elapsed


def time_full(passes):
    """Full passes, each by a new tracker; returns (report, ms list)."""
    times, found = [], None
    for _ in range(passes):
        tracker = resource_tracker.ResourceTracker(HOST, DRIVERS)
        found, elapsed = _pass(tracker)
        times.append(elapsed)
    return found, times


def time_unchanged(passes, root, as_sysfs):
    """A full pass, then ``passes`` more by the same tracker; the tree is
    fingerprinted by the rules of sysfs or by those of a fixture."""
    fingerprint.treat_as_kernfs(root, as_sysfs)
    tracker = resource_tracker.ResourceTracker(HOST, DRIVERS)
    full, _elapsed = _pass(tracker)
    times, reports, cached = [], [], 0
    for _ in range(passes):
        found, elapsed = _pass(tracker)
        times.append(elapsed)
        reports.append(found)
        cached += bool(tracker.last_pass_cached)
    same = all(_canonical(found) == _canonical(full) for found in reports)
    return times, same, cached


def _canonical(host_report):
    return json.dumps(host_report.to_primitive(), sort_keys=True)


def profile_full(limit=25):
    """The hot spots of one full pass, as pstats prints them."""
    tracker = resource_tracker.ResourceTracker(HOST, DRIVERS)
    profiler = cProfile.Profile()
    profiler.enable()
    tracker.discover()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats('tottime').print_stats(
        limit)
    return out.getvalue()


def count(engine, func):
    with sqlcount.StatementCounter(engine) as counter:
        result = func()
    return result, len(counter.statements), len(counter.writes)


def conductor_sql(found):
    """Print the conductor's statements; False when the heartbeat failed.
    """
    engine = session.get_engine()
    migration.upgrade('head', engine=engine)
    conductor_manager.bind_objects_to_database()
    ctx = cyborg_context.get_admin_context()
    first = report.HostReport.from_primitive(found.to_primitive())
    _result, stmts, writes = count(engine, lambda: inventory.apply_report(
        ctx, first, generation=1))
    print('First report: %d SQL statements, %d writes' % (stmts, writes))
    answer, stmts, writes = count(
        engine, lambda: service_queries.agent_heartbeats(
            ctx, inventory.AGENT_BINARY, {HOST: 1}))
    print('Unchanged host (agent heartbeat): %d SQL statements, %d writes '
          '(the liveness UPDATE), 0 inventory writes' % (stmts, writes))
    _result, stmts, writes = count(engine, lambda: inventory.apply_report(
        ctx, first, generation=2))
    print('Whole report with nothing changed: %d SQL statements, %d writes '
          '(the generation UPDATE)' % (stmts, writes))
    if answer != {HOST: True}:
        print('FAILED: the heartbeat of generation 1 was answered %r'
              % answer)
        return False
    return True


def configure(workdir, db_url, sizes):
    CONF([], project='cyborg', default_config_files=[])
    CONF.set_override('state_path', workdir)
    CONF.set_override('sysfs_root', workdir + '/sys', group='agent')
    CONF.set_override('device_spec', [NVME_SPEC], group='pci')
    vgpu_types = ['nvidia-%d' % (222 + n) for n in range(sizes.t4_types)]
    vgpu_types += ['nvidia-%d' % (592 + n) for n in range(sizes.a10_types)]
    CONF.set_override('enabled_vgpu_types', vgpu_types,
                      group='gpu_devices')
    CONF.set_override('connection', db_url or
                      'sqlite:///%s/bench.sqlite' % workdir,
                      group='database')
    objects.register_all()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--passes', type=int, default=20,
                        help='passes of each kind (default 20)')
    parser.add_argument('--tiny', action='store_true',
                        help='15 functions instead of about 200 (the '
                             'test suite runs it so)')
    parser.add_argument('--profile', action='store_true',
                        help='also print the hot spots of one full pass')
    parser.add_argument('--db-url')
    parser.add_argument('--dir', help='where the temporary tree goes '
                                      '(default: the system\'s temp dir)')
    args = parser.parse_args()
    if args.passes < 1:
        parser.error('--passes must be at least 1')
    return _workdir.run_in_tempdir(run, args)


def run(args, workdir):
    sizes = TINY if args.tiny else Sizes()
    root = workdir + '/sys'
    configure(workdir, args.db_url, sizes)
    host = build_host(root, sizes)
    age(root)
    # NOTE(bench): the agent fingerprints /sys by the rules of sysfs; the
    # simulated tree is taken so too, to cost what a real host costs.
    fingerprint.treat_as_kernfs(root)
    found, full = time_full(args.passes)
    deployables = sum(len(d.deployables) for d in found.devices)
    handles = sum(len(dep.attach_handles) for d in found.devices
                  for dep in d.deployables)
    print('Simulated host: %d PCI functions (%d VFs, %d mdev types) -> %d '
          'devices, %d deployables, %d attach handles' % (
              host.functions, host.vfs, host.mdev_types, len(found.devices),
              deployables, handles))
    print('Drivers: %s' % ', '.join(DRIVERS))
    print('Full discovery (new tracker, fresh sysfs scan; %d passes): %s'
          % (len(full), percentiles(full)))
    same = True
    medians = {}
    for label, as_sysfs in (('sysfs rules, as on a real host', True),
                            ('fixture rules, also each function\'s file '
                             'stats', False)):
        times, equal, cached = time_unchanged(args.passes, root, as_sysfs)
        same = same and equal and cached == len(times)
        medians[as_sysfs] = statistics.median(times)
        print('Unchanged re-discovery (same tracker, %s; %d passes, %d '
              'from the discovery cache): %s' % (label, len(times), cached,
                                                 percentiles(times)))
    print('Unchanged passes come from the cache and report what the full '
          'pass did: %s' % ('yes' if same else 'NO'))
    full_ok = statistics.median(full) <= TARGET_FULL_MS
    unchanged_ok = medians[True] <= TARGET_UNCHANGED_MS
    print('Targets (medians, sysfs rules): full <= %d ms %s, unchanged <= '
          '%d ms %s' % (TARGET_FULL_MS, 'met' if full_ok else 'NOT met',
                        TARGET_UNCHANGED_MS,
                        'met' if unchanged_ok else 'NOT met'))
    if args.profile:
        fingerprint.treat_as_kernfs(root)
        print(profile_full())
    heartbeat_ok = conductor_sql(found)
    print('Command: %s' % shlex.join(['python'] + sys.argv))
    return 0 if same and heartbeat_ok else 1


if __name__ == '__main__':
    sys.exit(main())
