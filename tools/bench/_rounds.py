"""The simulated agents of the bootstorm benchmark and the rounds they run.

Each agent is the real ``AgentManager`` of one host with the fake driver;
its Placement adapter and its conductor client count what they send. A
round has every agent report at once and then checks, in Cyborg's and
Placement's databases, that every host's rows and providers are there
once each, as the fake driver reports them.
"""

import collections
import os
import queue
import threading
import time

import _stack
from api_v2 import pct
from oslo_config import cfg
from placement_sync import RecordingAdapter
import requests

from cyborg import embedded_placement
from cyborg.agent import manager as agent_manager
from cyborg.agent import placement as agent_placement
from cyborg.agent import resource_tracker
from cyborg.clients import placement as placement_client
from cyborg.drivers import base
from cyborg.drivers import fake

CONF = cfg.CONF
HANDLES = 4
VERIFY_TIMEOUT = 60
CONDUCTOR_CALLS = ('report_data', 'report_delta', 'agent_heartbeat',
                   'device_states')


class RoundStats:
    """What the agents of one round saw; shared by their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rpc = collections.Counter()
        self.rpc_failed = collections.Counter()
        self.rpc_ms = collections.defaultdict(list)
        self.last_call = 0.0
        self.finished = {}
        self.latencies = []
        self.retries = 0
        self.exceptions = collections.Counter()
        self.unconverged = []


class CountingConductor:
    """The agent's ConductorAPI, counting the calls and their returns."""

    def __init__(self, api, stats):
        self.api = api
        self.stats = stats

    def __getattr__(self, name):
        call = getattr(self.api, name)
        if name not in CONDUCTOR_CALLS:
            return call

        def counted(*args, **kwargs):
            start = time.monotonic()
            try:
                result = call(*args, **kwargs)
            except Exception:
                with self.stats.lock:
                    self.stats.rpc_failed[name] += 1
                raise
            now = time.monotonic()
            with self.stats.lock:
                self.stats.rpc[name] += 1
                self.stats.rpc_ms[name].append((now - start) * 1000)
                self.stats.last_call = max(self.stats.last_call, now)
            return result
        return counted


class Agent:
    """One simulated compute host: the real AgentManager, fake driver."""

    def __init__(self, host, placement_url):
        """:param placement_url: None for an agent that does not use
        Placement (``--no-placement``)."""
        self.host = host
        self.recorder = RecordingAdapter(None)
        tree = None
        if placement_url is not None:
            self.recorder.adapter = embedded_placement.client_for(
                placement_url).adapter
            tree = agent_placement.ProviderTree(
                host, os.path.join(CONF.state_path,
                                   'agent-%s-placement.json' % host),
                client=placement_client.PlacementClient(self.recorder))
        self.manager = agent_manager.AgentManager(
            host, tracker=resource_tracker.ResourceTracker(
                host, ['fake_driver']), placement=tree)
        self.manager.init_host()
        self.api = self.manager.conductor

    def converge(self, stats, deadline):
        """report() until it needs no retry, as the periodic loop would."""
        while True:
            start = time.monotonic()
            try:
                delay = self.manager.report()
            except Exception as exc:  # noqa: BLE001 - counted, a failure
                with stats.lock:
                    stats.exceptions['%s: %s' % (
                        type(exc).__name__,
                        ' '.join(str(exc).split())[:200])] += 1
                delay = 1.0
            else:
                now = time.monotonic()
                with stats.lock:
                    stats.latencies.append((now - start) * 1000)
                    if delay is None:
                        stats.finished[self.host] = now
                        return
                    stats.retries += 1
            if time.monotonic() + delay > deadline:
                with stats.lock:
                    stats.unconverged.append(self.host)
                return
            time.sleep(delay)


def expected(hosts):
    """What the fake driver reports, as SqlCounter.dump() and
    PlacementProbe.tree() would show it."""
    rows, tree = {}, {}
    for host in hosts:
        found = fake.FakeDriver().discover(base.DiscoveryContext(host))
        rows[host] = sorted(
            (dev.controlpath.cpid_type,
             _stack.canonical(dev.controlpath.cpid_info),
             tuple(sorted(dep.name for dep in dev.deployables)),
             tuple(sorted((h.attach_type, _stack.canonical(h.attach_info))
                          for dep in dev.deployables
                          for h in dep.attach_handles)))
            for dev in found)
        # NOTE(bench): new devices are inactive: fully reserved.
        tree[host] = sorted((dep.name, [(dep.num_accelerators,
                                         dep.num_accelerators)])
                            for dev in found for dep in dev.deployables)
    return ({h: r for h, r in rows.items() if r},
            {h: t for h, t in tree.items() if t})


def differences(label, found, wanted):
    """Lines naming the hosts whose entries differ, a few of each kind."""
    missing = sorted(set(wanted) - set(found))
    extra = sorted(set(found) - set(wanted))
    duplicated = sorted(h for h in set(found) & set(wanted)
                        if len(found[h]) > len(wanted[h]))
    other = sorted(h for h in set(found) & set(wanted)
                   if found[h] != wanted[h] and h not in duplicated)
    lines = []
    for what, names in (('hosts missing', missing),
                        ('unexpected hosts', extra),
                        ('hosts with duplicated entries', duplicated),
                        ('hosts with other entries', other)):
        if names:
            lines.append('%s: %d %s (%s%s)' % (
                label, len(names), what, ', '.join(names[:5]),
                ', ...' if len(names) > 5 else ''))
    if other:
        lines.append('%s: %s has %s, expected %s' % (
            label, other[0], found[other[0]][:2], wanted[other[0]][:2]))
    return lines


class Run:
    """The rounds for one number of hosts, on one Stack."""

    def __init__(self, stack, agents, args, failures):
        self.stack = stack
        self.agents = agents
        self.args = args
        self.failures = failures
        self.hosts = [a.host for a in agents]
        self.killed_at = None

    def round(self, label, kill_after=None):
        n = len(self.agents)
        stats = RoundStats()
        for agent in self.agents:
            agent.recorder.kinds.clear()
            agent.manager.conductor = CountingConductor(agent.api, stats)
        todo = queue.SimpleQueue()
        for agent in self.agents:
            todo.put(agent)
        go = threading.Event()
        deadline = [0.0]

        def worker():
            go.wait()
            while True:
                try:
                    agent = todo.get_nowait()
                except queue.Empty:
                    return
                agent.converge(stats, deadline[0])

        threads = [threading.Thread(target=worker, daemon=True)
                   for _ in range(min(self.args.concurrency, n))]
        for thread in threads:
            thread.start()
        wanted_counts = self._wanted_counts()
        others = self.stack.sql.other_clients()
        self.stack.reset_peak_rss()
        mark, cpu = self.stack.sql.mark(), self.stack.cpu.sample()
        start = time.monotonic()
        deadline[0] = start + self.args.round_timeout
        go.set()
        killer = None
        if kill_after is not None:
            killer = threading.Timer(kill_after, self._kill, (start,))
            killer.start()
        for thread in threads:
            thread.join(max(0.0, deadline[0] + 120 - time.monotonic()))
        if killer is not None:
            killer.cancel()
        reports_s = max(stats.finished.values(), default=start) - start
        held = self._verify_counts(wanted_counts)
        converge_s = time.monotonic() - start
        sql, connections = self.stack.sql.since(mark)
        cpu = self.stack.cpu.since(cpu)
        others = max(others, self.stack.sql.other_clients())
        if killer is not None:
            killer.join()
            if self.killed_at is None:
                print('  (the round ended before the conductor was to be '
                      'killed)')
        kinds = collections.Counter()
        for agent in self.agents:
            kinds.update(agent.recorder.kinds)
        placement = sum(kinds.values())
        result = {
            'round': label, 'hosts': n,
            'reports_s': round(reports_s, 3),
            'converge_s': round(converge_s, 3) if held else None,
            'db_converge_s': round(stats.last_call - start, 3)
            if stats.last_call else None,
            'sql': sql, 'sql_per_host': round(sql / n, 2),
            'db_connections_opened': connections,
            'placement_requests': placement,
            'placement_per_host': round(placement / n, 2),
            'placement_kinds': dict(kinds), 'rpc': dict(stats.rpc),
            'rpc_ms': {name: {'p50': round(pct(ms, 50), 1),
                              'max': round(max(ms), 1)}
                       for name, ms in stats.rpc_ms.items()},
            'rpc_failed': dict(stats.rpc_failed), 'retries': stats.retries,
            'exceptions': dict(stats.exceptions),
            'unconverged': len(stats.unconverged), 'cpu_s': cpu,
            'other_db_connections': others,
            'report_ms': {'p50': round(pct(stats.latencies, 50), 1),
                          'p90': round(pct(stats.latencies, 90), 1),
                          'max': round(max(stats.latencies), 1)}
            if stats.latencies else None,
        }
        if stats.exceptions:
            self.failures.append('%s: report() raised %d times' % (
                label, sum(stats.exceptions.values())))
        if stats.unconverged:
            self.failures.append('%s: %d hosts never converged (%s)' % (
                label, len(stats.unconverged),
                ', '.join(sorted(stats.unconverged)[:5])))
        if not held:
            self.failures.append(
                '%s: rows and providers still not as expected %d s after '
                'the last report: %s' % (label, VERIFY_TIMEOUT,
                                         self._counts()))
        self._verify_rows(label)
        if kill_after is not None:
            result['killed_after_s'] = self.killed_at
            for proc in self.stack.conductors:
                self.stack.wait_conductor(proc)
        result['conductor_rss_mib'] = self.stack.conductor_rss_mib()
        self._print_round(result)
        return result

    def _kill(self, start):
        proc = self.stack.conductors[0]
        self.killed_at = round(time.monotonic() - start, 2)
        self.stack.kill_and_restart(proc)
        print('  (SIGKILL to %s %.1f s into the round; started again)' % (
            proc.name, self.killed_at), flush=True)

    def _wanted_counts(self):
        devices = len(self.agents) * CONF.fake_driver.device_count
        return (devices, devices, devices * HANDLES), devices

    def _counts(self):
        if self.args.no_placement:
            return self.stack.sql.counts(), self._wanted_counts()[1]
        return (self.stack.sql.counts(),
                self.stack.placement_probe.children())

    def _verify_counts(self, wanted):
        deadline = time.monotonic() + VERIFY_TIMEOUT
        while True:
            if self._counts() == wanted:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _verify_rows(self, label):
        rows, tree = expected(self.hosts)
        self.failures.extend(differences('%s, Cyborg DB' % label,
                                         self.stack.sql.dump(), rows))
        if not self.args.no_placement:
            self.failures.extend(differences(
                '%s, Placement' % label, self.stack.placement_probe.tree(),
                tree))

    def _print_round(self, r):
        n = r['hosts']
        print('  %-9s converged in %s s (every report returned after '
              '%.2f s, the last conductor call after %s s); %d retries' % (
                  r['round'], _fmt(r['converge_s']), r['reports_s'],
                  _fmt(r['db_converge_s']), r['retries']))
        print('  %-9s %.1f SQL statements/host (%d; %d new connections); '
              '%.1f Placement requests/host (%d)' % (
                  '', r['sql_per_host'], r['sql'],
                  r['db_connections_opened'], r['placement_per_host'],
                  r['placement_requests']))
        if r['report_ms']:
            print('  %-9s report(): p50 %.0f ms, p90 %.0f ms, max %.0f ms; '
                  'conductor calls: %s' % (
                      '', r['report_ms']['p50'], r['report_ms']['p90'],
                      r['report_ms']['max'], ', '.join(
                          '%s %d (p50 %.0f ms, max %.0f ms)' % (
                              name, count, r['rpc_ms'][name]['p50'],
                              r['rpc_ms'][name]['max'])
                          for name, count in sorted(r['rpc'].items()))
                      or 'none'))
        print('  %-9s CPU s: %s' % ('', _cpu(r['cpu_s'])))
        print('  %-9s %s' % ('', _rss(r['conductor_rss_mib'])))
        if r['other_db_connections']:
            print('  %-9s (MariaDB had %d connections to other databases: '
                  'the SQL figures include their statements)' % (
                      '', r['other_db_connections']))
        if r['rpc_failed']:
            print('  %-9s conductor calls that raised: %s' % (
                '', ', '.join('%s %d' % kv
                              for kv in sorted(r['rpc_failed'].items()))))
        for line, count in r['exceptions'].items():
            print('  %-9s report() raised %d x %s' % ('', count, line))
        if self.args.verbose and r['placement_kinds']:
            for kind, count in sorted(r['placement_kinds'].items()):
                print('  %-9s   %7.2f/host  %s' % ('', count / n, kind))

    def gets(self, path, key, rows):
        url = self.stack.api_url + path
        latencies, size = [], 0
        with requests.Session() as http:
            others = self.stack.sql.other_clients()
            self.stack.reset_peak_rss()
            mark, cpu = self.stack.sql.mark(), self.stack.cpu.sample()
            for index in range(self.args.requests):
                start = time.perf_counter()
                resp = http.get(url, timeout=600)
                latencies.append((time.perf_counter() - start) * 1000)
                if resp.status_code != 200:
                    self.failures.append('GET %s: HTTP %d: %s' % (
                        path, resp.status_code, resp.text[:300]))
                    return None
                if index == 0:
                    size = len(resp.content)
                    listed = len(resp.json()[key])
                    if listed != rows:
                        self.failures.append('GET %s listed %d, expected %d'
                                             % (path, listed, rows))
            sql, _connections = self.stack.sql.since(mark)
            cpu = self.stack.cpu.since(cpu)
            others = max(others, self.stack.sql.other_clients())
        result = {'rows': rows, 'bytes': size,
                  'p50_ms': round(pct(latencies, 50), 1),
                  'p90_ms': round(pct(latencies, 90), 1),
                  'sql_per_request': round(sql / len(latencies), 2),
                  'cpu_s': cpu, 'other_db_connections': others,
                  'conductor_rss_mib': self.stack.conductor_rss_mib()}
        print('  GET %-15s %d rows, %d KiB: p50 %.1f ms, p90 %.1f ms; %.1f '
              'SQL statements/request' % (
                  path, rows, size // 1024, result['p50_ms'],
                  result['p90_ms'], result['sql_per_request']))
        print('  %-19s CPU s: %s' % ('', _cpu(cpu)))
        print('  %-19s %s' % ('', _rss(result['conductor_rss_mib'])))
        if others:
            print('  %-19s (MariaDB had %d connections to other databases)'
                  % ('', others))
        return result


def _rss(peaks):
    return "conductors' peak RSS MiB: %s" % (', '.join(
        '%s %.1f' % kv for kv in peaks.items()) or 'not measured')


def _fmt(value):
    return 'never' if value is None else '%.2f' % value


def _cpu(cpu):
    return ', '.join('%s %.1f' % kv for kv in sorted(
        cpu.items(), key=lambda kv: -kv[1]))
