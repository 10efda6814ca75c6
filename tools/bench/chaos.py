"""Chaos bench: Nova's boots through every fault of a clustered deployment.

It starts Cyborg as operators deploy it (``cyborg.tests.cluster``): a
3-node Galera cluster and two cyborg-api processes behind HAProxy, a
3-node RabbitMQ cluster with quorum queues, Placement, ``--conductors``
cyborg-conductor processes and ``--agents`` cyborg-agent processes whose
fake devices hand out MDEV handles, so that every bind makes the agent
prepare its handle (``--prepare-delay`` seconds) and a conductor holds
binds long enough to lose them. A fake Nova API records the
``accelerator-request-bound`` events.

``--boots`` threads play Nova (claim a deployable with room in Placement,
create the ARQs, bind, wait for the event, delete) and ``--clients``
threads list, create and delete ARQs to measure the API's throughput.
After ``--settle`` seconds, when the boots have left their first,
synchronised cycle, and ``--warmup`` seconds more (the baseline), the
bench injects one fault after the other, each after ``--calm`` seconds
whose throughput it is judged against (the load's throughput drifts as
the run ages; a timeline of successes per 10 s shows it): a burst of
``--burst`` boots and SIGKILL of the conductor holding the most binds (at
least ``--min-held``); SIGSTOP of the busiest for ``--hang`` s; a
conductor's clock ``--skew`` s ahead for ``--skew-for`` s; SIGKILL of the
RabbitMQ node leading the most queues, and a rolling restart of all
three; SIGKILL of the Galera node HAProxy writes to and its rejoin; an
HAProxy restart; one agent cut from RabbitMQ for ``--cut`` s; every
Galera node stopped for ``--db-down`` s.

For each fault it prints a row: requests by status, the API's throughput
(and the clients' alone) against the calm before it (and the baseline)
and its p50/p99 (and the reads' and creates' p99), the CPUs
the conductors kept busy during it and in the calm before (from
/proc), and the machine's idle CPUs, binds
that ended BindFailed though Placement gave them a device with room
(those on the cut agent's host during the cut, and those whose claim
Placement took past the device's capacity, are counted apart), lost,
stuck and double-bound ARQs, duplicate Nova events, leaked handles (in
the database, and on a host: prepared by an agent for an ARQ that no
longer holds them), orphan ARQs (created for a request whose creator got
an error), takeover p50/p95 of the binds the conductor held, log lines
per second and error lines. It exits 1 on any 500, lost, stuck, double-
bound or leaked ARQ, a duplicate Nova event, an orphan the conductors'
removal did not take within twice ``--orphan-age``, an unexpected
BindFailed, live work taken (in any fault) from a conductor that was
neither stopped nor skewed, a stopped conductor's row whose API
throughput (every request answered with success, the boots' and the
clients') is under 80 % of the calm before it (a calm as long as the
hang) or whose reads and creates have a p99 over 2 s, a kill that found
fewer than ``--min-held`` binds held, or a probe that errored.

Usage: python tools/bench/chaos.py [--tiny] [--only FAULT]... [--json
PATH] [--logs DIR] (see --help for the sizes)
"""

import argparse
import json
import os
import shlex
import signal
import sys
import time

# NOTE(bench): helpers beside this script (its directory is on sys.path).
import _boots
import _chaos_faults
import _chaos_probe
import _meters
import _timing
import _workdir
import bootstorm
import requests
import sick_parts

from cyborg import embedded_placement
from cyborg.tests import deployments
from cyborg.tests.cluster import stack as cluster_stack

OK = (200, 201, 202, 204)
#: The fault whose throughput is judged.
HUNG = 'conductor SIGSTOP'
TIMELINE_S = 10
_SKEW_SEEN = 'seconds ahead of the database server'


class Run:
    """One bench run on its stack; ``rows`` are the faults' figures."""

    def __init__(self, args, stack, probe, boots, load, started):
        self.args = args
        self.stack = stack
        self.probe = probe
        self.boots = boots
        self.load = load
        self.logs = _chaos_probe.Logs(stack)
        self.rows = []
        self.baseline = None
        self.counted = set()
        self.orphans_seen = set()
        self.started = started
        self.cpu = _meters.CpuMeter(_cpu_groups(stack))

    def records(self, start, end):
        return self.boots.between(start, end) + self.load.between(start,
                                                                  end)

    def measure_baseline(self, seconds):
        start = time.monotonic()
        time.sleep(seconds)
        end = time.monotonic()
        self.baseline = _traffic(self.records(start, end),
                                 self.load.between(start, end), end - start)
        print('baseline: %s' % json.dumps(self.baseline), flush=True)

    def fault(self, name, inject):
        print('%s ...' % name, flush=True)
        # NOTE(bench): the load's throughput drifts as the run ages (on 2
        # CPUs from 17 successes/s after the first minutes to 13-15 later,
        # with no fault at all); each fault is judged against the calm
        # just before it, which also lets the previous fault settle.
        calm, cpu_calm = time.monotonic(), self.cpu.sample()
        time.sleep(self._calm(name))
        before = _traffic(self.records(calm, time.monotonic()),
                          self.load.between(calm, time.monotonic()),
                          time.monotonic() - calm)
        cpu_start = self.cpu.sample()
        mark, start = self.logs.mark(), time.monotonic()
        found = inject(self)
        end = time.monotonic()
        cpu_end = self.cpu.sample()
        self.boots.hosts_of = self.probe.targets() or self.boots.hosts_of
        _chaos_faults.wait_resolved(self, start, end)
        settled = time.monotonic()
        texts = self.logs.since(mark)
        row = {'fault': name, 'fault_s': round(end - start, 1),
               'at_s': round(start - self.started),
               'victim': found.get('victim')}
        row.update(_traffic(self.records(start, end),
                            self.load.between(start, end), end - start,
                            self.baseline))
        row['before_ok_per_s'] = before['ok_per_s']
        row['before_api_ok_per_s'] = before['api_ok_per_s']
        row['of_before'] = _ratio(row['ok_per_s'], before['ok_per_s'])
        row['api_of_before'] = _ratio(row['api_ok_per_s'],
                                      before['api_ok_per_s'])
        row['cpu_before'] = _cpu_rates(self.cpu, cpu_calm, cpu_start,
                                       start - calm)
        row['cpu'] = _cpu_rates(self.cpu, cpu_start, cpu_end, end - start)
        row['requests'] = _statuses(self.records(start, settled))
        row.update(self._arqs(start, end, texts, found.get('cut_host')))
        row.update(self._holdings())
        row['orphans'] = self._orphans()
        takeover = found.get('takeover')
        if takeover is not None:
            row['takeover'] = _takeover(takeover, found['taken'])
        # NOTE(bench): only a conductor that was stopped (or whose clock
        # ran ahead) may lose work it held; after an outage every other
        # conductor is alive and keeps its binds.
        row['took_live'] = self.logs.took_live(texts, found.get('victim'))
        if name == 'conductor clock ahead':
            # NOTE(bench): the skewed conductor says so, or its clock was
            # never moved and the row proves nothing.
            found['reached'] = _SKEW_SEEN in texts.get(found['victim'], '')
        row['reached'] = found.get('reached', True)
        row.update(self.logs.figures(texts, settled - start))
        self.rows.append(row)
        print('  %s' % json.dumps(row), flush=True)

    def _calm(self, name):
        # NOTE(bench): the boots' cycles swing the successes of 10 s
        # between 6 and 26 (see the timeline); the one row judged on its
        # ratio is judged against a calm as long as itself, which averages
        # over as many cycles.
        if name == HUNG:
            return max(self.args.calm, self.args.hang)
        return self.args.calm

    def _arqs(self, start, end, texts, cut_host):
        # NOTE(bench): a boot lost in an earlier fault is still unresolved
        # now; it counts once, where it was lost.
        window = [b for b in self.boots.window(start, end)
                  if id(b) not in self.counted]
        self.counted.update(id(b) for b in window if b.lost is not None)
        failed = _chaos_probe.Logs.bind_failures(texts)
        unexpected, expected, overallocated, reasons = 0, 0, 0, set()
        for boot in window:
            if not (boot.states or {}).get('BindFailed'):
                continue
            why = [failed.get(arq) for arq in boot.arqs]
            # NOTE(bench): an over-claimed device explains a bind that
            # found no free handle, never one whose host work failed.
            if boot.overallocated and all(
                    reason[1].startswith(NO_HANDLE) for reason in why
                    if reason):
                overallocated += 1
                continue
            if cut_host and boot.host == cut_host:
                expected += 1
                continue
            unexpected += 1
            reasons.update(reason[1][:160] for reason in why if reason)
        lost = [b for b in window if b.lost is not None]
        threshold = (self.args.takeover_after + self.args.prepare_delay +
                     2 * self.args.heartbeat_interval + 10)
        stuck = self.probe.stuck(threshold)
        return {'boots': len(window), 'bind_failed': unexpected,
                'bind_failed_cut_host': expected,
                'bind_failed_overallocated': overallocated,
                'overallocated_claims': sum(b.overallocated for b in window),
                'bind_failed_why': sorted(reasons)[:5],
                'lost': len(lost),
                'lost_why': sorted({b.lost for b in lost}),
                'stuck': len(stuck), 'stuck_rows': stuck[:5],
                'duplicate_events': self.boots.duplicate_events(window)}

    def _holdings(self):
        """Double-bound and leaked handles; a leak must outlast the
        release in flight that may explain it."""
        patience = self.args.takeover_after + 30
        leaks = set(self.probe.host_leaks(self.stack.workdir))
        db_leaked = self.probe.leaked()
        deadline = time.monotonic() + patience
        while (leaks or db_leaked) and time.monotonic() < deadline:
            time.sleep(1)
            leaks &= set(self.probe.host_leaks(self.stack.workdir))
            db_leaked = min(db_leaked, self.probe.leaked())
        return {'double_bound': self.probe.double_bound(),
                'leaked': db_leaked, 'host_leaked': len(leaks),
                'host_leaked_rows': sorted(leaks)[:5]}

    def _orphans(self):
        """ARQs with no instance that no client knows of: created for a
        request whose creator got an error. New ones since the last row."""
        found = None
        for _ in range(2):
            known = self.boots.known_arqs() | self.load.known()
            now = self.probe.no_instance() - known
            found = now if found is None else found & now
            time.sleep(3)
        new = found - self.orphans_seen
        self.orphans_seen |= found
        return len(new)


def _cpu_groups(stack):
    """Each conductor, the APIs, and the rest of the machine: where the
    CPUs went while a fault lasted (a restarted service has a new pid)."""
    groups = {proc.name: (lambda proc=proc: [proc.proc.pid])
              for proc in stack.conductors}
    groups['apis'] = lambda: [proc.proc.pid for proc in stack.apis]
    return groups


def _conductors_cpu(rates):
    return sum(cpu for name, cpu in rates.items()
               if name.startswith('cyborg-conductor'))


def _cpu_rates(meter, then, now, seconds):
    """CPUs each group kept busy on average between two samples (1.0 is
    one CPU), and the machine's idle CPUs."""
    used = meter.between(then, now)
    rates = {name: round(cpu / seconds, 2) for name, cpu in used.items()}
    busy = (now[1] - then[1]) / seconds
    rates['idle'] = round(max(0.0, os.cpu_count() - busy), 2)
    return rates


def timeline(load, started, step):
    """The clients' successful requests per second in each ``step``
    seconds since ``started``: how a fault's row compares with the calm
    around it."""
    records = load.between(started, time.monotonic())
    counts = {}
    for record in records:
        if record[3] in OK:
            index = int((record[1] - started) // step)
            counts[index] = counts.get(index, 0) + 1
    last = max(counts, default=-1)
    return [round(counts.get(i, 0) / step, 1) for i in range(last + 1)]


def _statuses(records):
    counts = {}
    for record in records:
        counts[str(record[3])] = counts.get(str(record[3]), 0) + 1
    return dict(sorted(counts.items()))


def _ratio(value, before):
    return round(value / before, 2) if before else None


def _p(times, quantile):
    return round(_timing.quantile(times, quantile), 3) if times else None


def _traffic(records, load_records, seconds, baseline=None):
    """Successes per second of the clients, and of every request the
    API answered (the boots' too: the API's throughput); p50/p99 of
    every request, and p99 of the reads and creates."""
    seconds = seconds or float('inf')
    rate = sum(1 for r in load_records if r[3] in OK) / seconds
    api_rate = sum(1 for r in records if r[3] in OK) / seconds
    times = [r[1] - r[0] for r in records]
    found = {'ok_per_s': round(rate, 1), 'api_ok_per_s': round(api_rate, 1),
             'p50_s': _p(times, 0.5), 'p99_s': _p(times, 0.99),
             'read_create_p99_s': _p([r[1] - r[0] for r in records
                                      if r[2] in ('read', 'create')], 0.99)}
    if baseline:
        found['of_baseline'] = _ratio(rate, baseline['ok_per_s'])
        found['api_of_baseline'] = _ratio(api_rate,
                                          baseline['api_ok_per_s'])
    return found


def _takeover(takeover, taken):
    seconds = sorted(takeover.seconds.values())
    return {'held': takeover.held, 'taken': len(seconds),
            'all_taken': bool(taken), 'error': takeover.error,
            'p50_s': round(_timing.quantile(seconds, 0.5), 1)
            if seconds else None,
            'p95_s': round(_timing.quantile(seconds, 0.95), 1)
            if seconds else None}


def run_bench(args, workdir):
    hosts = ['chaos-%d' % i for i in range(1, args.agents + 1)]
    with deployments.FakeNova() as nova:
        sections = {
            'fake_driver': {'device_count': args.devices,
                            'accelerators_per_device': args.handles,
                            'attach_type': 'MDEV',
                            'prepare_delay': args.prepare_delay},
            # NOTE(bench): new devices are ready at once, so that
            # Placement offers their capacity (no operator activates).
            'conductor': {'auto_activate_new_devices': 'true',
                          'takeover_after': args.takeover_after,
                          'heartbeat_interval': args.heartbeat_interval,
                          'orphan_arq_age': args.orphan_age},
            'nova': nova.section()}
        print('Starting the clusters and %d agents ...' % args.agents,
              flush=True)
        try:
            with cluster_stack.ClusterStack(
                    workdir, hosts, conductors=args.conductors,
                    sections=sections, cuttable=hosts[:1]) as stack:
                return _run(args, stack, nova)
        finally:
            _workdir.copy_logs(workdir, args.logs)


def _run(args, stack, nova):
    stack.wait_inventory(args.devices)
    with requests.Session() as http:
        resp = http.post(stack.api_url + '/v2/device_profiles', json=[{
            'name': _boots.PROFILE, 'groups': [{
                'resources:%s' % _boots.RESOURCE_CLASS: '1',
                'trait:%s' % _boots.TRAIT: 'required'}]}], timeout=60)
        resp.raise_for_status()
    probe = _chaos_probe.Probe(stack.galera)
    boots = _boots.Boots(stack.api_url, stack.placement.url,
                         embedded_placement.ADMIN_TOKEN, nova, args.boots,
                         args.resolve_timeout)
    load = sick_parts.Load(stack.api_url, args.clients)
    result = {'rows': []}
    try:
        started = time.monotonic()
        boots.start(probe.targets())
        load.start()
        print('%d boots and %d clients on %d hosts; baseline over %d s '
              'after %d s' % (args.boots, args.clients, args.agents,
                             args.warmup, args.settle), flush=True)
        # NOTE(bench): the boots start together and wait out their first
        # prepares together; until they spread, the clients have the
        # machine nearly to themselves (on 2 CPUs, 30 successes/s for the
        # first 40 s, 18 after), and a baseline taken then makes every
        # fault look a third worse than it is.
        time.sleep(args.settle)
        run = Run(args, stack, probe, boots, load, started)
        run.measure_baseline(args.warmup)
        result['baseline'] = run.baseline
        result['rows'] = run.rows
        for name, inject in _chaos_faults.FAULTS:
            if not args.only or name in args.only:
                run.fault(name, inject)
        result['final'] = _final(args, run)
        result['timeline'] = timeline(load, run.started, TIMELINE_S)
    except _chaos_probe.ProbeError as exc:
        result['probe_error'] = str(exc)
    finally:
        load.stop()
        boots.stop(args.resolve_timeout)
        probe.close()
    return result


def _final(args, run):
    running = run.boots.stop(args.resolve_timeout)
    run.load.stop()
    probe = run.probe
    left = cluster_stack.wait_until(lambda: probe.left() == {}, 120)
    # NOTE(bench): orphans are removed once older than orphan_arq_age, by
    # a pass every as often; none may be left after twice that.
    orphans = probe.no_instance() - run.load.known() - run.boots.known_arqs()
    gone = cluster_stack.wait_until(
        lambda: not (probe.no_instance() & orphans),
        2 * args.orphan_age + 30)
    return {
        'boots_still_running': running,
        'instances': len(run.boots.boots),
        'no_valid_host': run.boots.no_valid_host,
        'lost_total': sum(b.lost is not None for b in run.boots.boots),
        'left': probe.left() if left is None else {},
        'double_bound': probe.double_bound(), 'leaked': probe.leaked(),
        'host_leaked': len(probe.host_leaks(run.stack.workdir)),
        'orphans_seen': len(run.orphans_seen | orphans),
        'orphans_left': 0 if gone is not None else len(
            probe.no_instance() & orphans),
        'requests': len(run.boots.records) + len(run.load.records),
    }


#: How the conductor words a bind that found every handle taken.
NO_HANDLE = 'no free attach handle'


def failures(result, args):
    found = []
    if result.get('probe_error'):
        found.append('a probe errored: %s' % result['probe_error'])
    for row in result['rows']:
        name = row['fault']
        if not row['boots']:
            found.append('%s: no boot was in flight, nothing judged' % name)
        if not row.get('reached', True):
            found.append('%s: the fault never reached its target' % name)
        if row['requests'].get('500'):
            found.append('%s: %d x 500' % (name, row['requests']['500']))
        # NOTE(bench): a row's orphans are judged at the end: a create
        # whose connection a fault cut (HAProxy's restart) leaves one that
        # no deadline can stop, which the conductors' removal must take.
        for key in ('bind_failed', 'lost', 'stuck', 'double_bound',
                    'leaked', 'host_leaked', 'duplicate_events',
                    'took_live'):
            if row.get(key):
                found.append('%s: %s %s' % (name, row[key], key))
        takeover = row.get('takeover')
        if takeover and (not takeover['all_taken'] or takeover['error']):
            found.append('%s: %d of %d binds taken over (%s)' % (
                name, takeover['taken'], takeover['held'],
                takeover['error'] or 'the others never'))
        if name == 'conductor kill -9' and takeover and \
                takeover['held'] < args.min_held:
            found.append('%s: the victim held %d binds (at least %d '
                         'wanted)' % (name, takeover['held'], args.min_held))
        if name == HUNG and \
                (row.get('api_of_before') or 0) < args.min_hung_ratio:
            found.append('%s: %.0f %% of the API\'s throughput before it '
                         '(at least %.0f %% wanted)' % (
                             name, 100 * (row.get('api_of_before') or 0),
                             100 * args.min_hung_ratio))
        if name == HUNG and args.max_hung_p99 and \
                (row.get('read_create_p99_s') or 0) > args.max_hung_p99:
            found.append('%s: reads and creates p99 %.2f s (at most %.1f '
                         'wanted)' % (name, row['read_create_p99_s'],
                                      args.max_hung_p99))
    final = result.get('final') or {}
    for key in ('boots_still_running', 'lost_total', 'double_bound',
                'leaked', 'host_leaked', 'orphans_left'):
        if final.get(key):
            found.append('in the end: %s %s' % (final[key], key))
    if final.get('left'):
        found.append('in the end: ARQs of deleted instances left: %s'
                     % final['left'])
    if not final and not result.get('probe_error'):
        found.append('the run did not finish')
    return found


def _cell(mapping):
    return ', '.join('%s: %s' % kv for kv in mapping.items()) or '0'


def table(result):
    head = ['Fault', 'Lasted (s)', 'Requests by status',
            'Throughput of the calm before: the API\'s (the clients\'); '
            'the API\'s of the baseline',
            'p50 / p99 (s); reads and creates p99',
            'Conductors\' CPUs (the calm before), idle',
            'BindFailed (cut host, Placement over)',
            'Lost / stuck / double', 'Duplicate events',
            'Leaked (DB / host)', 'Orphans', 'Takeover p50 / p95 (binds)',
            'Log lines/s', 'Error lines']
    rows = []
    for r in result['rows']:
        takeover = r.get('takeover')
        rows.append([
            r['fault'], '%.0f' % r['fault_s'], _cell(r['requests']),
            '%.0f %% (%.0f %%); %.0f %%' % (
                100 * (r.get('api_of_before') or 0),
                100 * (r.get('of_before') or 0),
                100 * (r.get('api_of_baseline') or 0)),
            '%s / %s; %s' % (r['p50_s'], r['p99_s'],
                             r['read_create_p99_s']),
            '%.2f (%.2f), %.2f' % (_conductors_cpu(r['cpu']),
                                   _conductors_cpu(r['cpu_before']),
                                   r['cpu']['idle']),
            '%d (%d, %d)' % (r['bind_failed'], r['bind_failed_cut_host'],
                             r['bind_failed_overallocated']),
            '%d / %d / %d' % (r['lost'], r['stuck'], r['double_bound']),
            str(r['duplicate_events']),
            '%d / %d' % (r['leaked'], r['host_leaked']),
            str(r['orphans']),
            '%s / %s s (%d)' % (takeover['p50_s'], takeover['p95_s'],
                                takeover['held']) if takeover else '-',
            '%.0f' % r['log_lines_per_s'], str(r['error_lines'])])
    lines = ['.. list-table:: Chaos bench', '   :header-rows: 1', '']
    for row in [head] + rows:
        lines.append('   * - %s' % row[0])
        lines.extend('     - %s' % cell for cell in row[1:])
    return '\n'.join(lines)


TINY = {'conductors': 3, 'agents': 2, 'devices': 2, 'handles': 4,
        'boots': 10, 'clients': 2, 'prepare_delay': 2, 'min_held': 1,
        'busy_wait': 20, 'hang': 12, 'skew_for': 10, 'down': 4, 'cut': 10,
        'db_down': 5, 'warmup': 8, 'settle': 5, 'calm': 3, 'burst': 4,
        'takeover_after': 6,
        # NOTE(bench): an orphan age under the time a bind answered 503
        # (rpc_timeout) takes to be sent again removes the ARQs of a boot
        # still binding them.
        'heartbeat_interval': 2, 'orphan_age': 30, 'resolve_timeout': 150,
        # NOTE(bench): a 12 s window on two shared CPUs measures noise.
        'min_hung_ratio': 0, 'max_hung_p99': 0}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add('--conductors', type=int, default=3, help='conductor processes')
    add('--agents', type=int, default=4, help='agent processes (hosts)')
    add('--devices', type=int, default=4, help='fake devices per host')
    add('--handles', type=int, default=8, help='MDEV handles per device')
    add('--boots', type=int, default=48, help='Nova boots in flight')
    add('--clients', type=int, default=8,
        help='clients listing, creating and deleting ARQs (throughput)')
    add('--prepare-delay', type=float, default=6,
        help='seconds an agent takes to prepare a handle')
    add('--min-held', type=int, default=10,
        help='binds the killed conductor must hold')
    add('--burst', type=int, default=24,
        help='boots started at once (a multi-create) before the kill')
    add('--calm', type=float, default=60,
        help='seconds before each fault whose throughput it is judged '
             'against')
    add('--busy-wait', type=float, default=120,
        help='seconds to wait for a conductor holding --min-held binds')
    add('--hang', type=float, default=120, help='seconds of the SIGSTOP')
    add('--skew', type=int, default=120,
        help='seconds the skewed conductor\'s clock is ahead')
    add('--skew-for', type=float, default=60,
        help='seconds the skewed conductor runs')
    add('--down', type=float, default=20,
        help='seconds a killed RabbitMQ or Galera node stays down')
    add('--cut', type=float, default=90,
        help='seconds the agent is cut from RabbitMQ')
    add('--db-down', type=float, default=30,
        help='seconds every Galera node stays stopped')
    add('--settle', type=float, default=90,
        help='seconds of load before the baseline, so that it measures '
             'the steady state')
    add('--warmup', type=float, default=60,
        help='seconds of the baseline before the first fault')
    add('--takeover-after', type=int, default=30,
        help='[conductor] takeover_after')
    add('--heartbeat-interval', type=int, default=5,
        help='[conductor] heartbeat_interval')
    add('--orphan-age', type=int, default=60,
        help='[conductor] orphan_arq_age; at least 3 x [api] rpc_timeout '
             '(10 s), or the ARQs of a boot whose bind was answered 503 '
             'go as orphans before the bind is sent again')
    add('--resolve-timeout', type=int, default=400,
        help='seconds a boot may wait for its ARQs before it is lost')
    add('--min-hung-ratio', type=float, default=0.8,
        help='throughput, against the calm before, the API must keep '
             'while a conductor is stopped')
    add('--max-hung-p99', type=float, default=2.0,
        help='seconds the p99 of reads and creates may reach while a '
             'conductor is stopped (0: not judged)')
    add('--only', action='append', metavar='FAULT',
        choices=[name for name, _inject in _chaos_faults.FAULTS],
        help='inject only this fault (repeatable)')
    add('--tiny', action='store_true',
        help='the functional suite\'s size: %s' % ', '.join(
            '%s %s' % item for item in TINY.items()))
    add('--json', metavar='PATH', help='write every figure to PATH')
    add('--logs', metavar='DIR', help='copy every log to DIR')
    add('--dir', help='where the run\'s files go (a temporary directory)')
    args = parser.parse_args(argv)
    if args.tiny:
        for name, value in TINY.items():
            setattr(args, name, value)
    if args.conductors < 2 or args.agents < 2:
        parser.error('--conductors and --agents must be at least 2: a '
                     'survivor takes over, and one agent is cut off')
    if args.orphan_age < 30:
        parser.error('--orphan-age must be at least 30 (3 x the API\'s '
                     'rpc_timeout)')
    if args.takeover_after < 2 * args.heartbeat_interval:
        parser.error('--takeover-after must be at least twice '
                     '--heartbeat-interval')
    return args


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, bootstorm._stop_on_sigterm)
    try:
        result = _workdir.run_in_tempdir(run_bench, args)
    except KeyboardInterrupt:
        print('Interrupted; everything started was stopped and removed.')
        return 130
    found = failures(result, args)
    print()
    print(table(result))
    print()
    print('Baseline: %s' % json.dumps(result.get('baseline')))
    print('Successes/s every %d s from the start of the load: %s' % (
        TIMELINE_S, ' '.join(str(v) for v in result.get('timeline', []))))
    print('Faults began at (s): %s' % ', '.join(
        '%s %s' % (r['fault'], r.get('at_s')) for r in result['rows']))
    print('In the end: %s' % json.dumps(result.get('final')))
    for line in found:
        print('FAILED: %s' % line)
    command = shlex.join(['python'] + (sys.argv if argv is None else
                                       [sys.argv[0]] + list(argv)))
    machine = bootstorm.machine({})
    print()
    print('Command: %s' % command)
    print('Machine: %d CPUs (%s)' % (machine['nproc'], machine['cpu']))
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(dict(result, command=command, machine=machine,
                           failures=found), out, indent=2, default=str)
    return 1 if found else 0


if __name__ == '__main__':
    os.environ.setdefault('PYTHONUNBUFFERED', '1')
    sys.exit(main())
