"""Chaos bench: Nova boots in flight through a killed conductor and outages.

It starts ``--conductors`` cyborg-conductor processes and one cyborg-api
(noauth) on a MariaDB server and a RabbitMQ node of its own (started from
a temporary directory on free ports: the machine's shared servers are
never stopped), Placement as a process on a new PostgreSQL database, a
fake Nova API that records the ``accelerator-request-bound`` events, and
``--agents`` simulated hosts in this process (the real AgentManager with
the fake driver, reporting every ``--report-interval`` seconds). Then
``--boots`` threads run Nova's sequence over and over (create ARQs,
PATCH the binding, wait until resolved and told, delete), and the bench
injects, one after the other:

1. SIGKILL of the conductor that holds the most work (``owner`` of
   BindStarted ARQs), started again once a survivor took its work over;
2. a restart of the RabbitMQ node (stopped ``--down`` seconds);
3. a restart of the MariaDB server (stopped ``--down`` seconds);
4. Placement stopped for ``--placement-down`` seconds.

At the start of each fault every agent gains a device, so Placement has
something to catch up with. For each fault it prints the API calls that
failed, by HTTP status; the seconds from the fault until every ARQ whose
bind was sent before the fault ended is resolved and Nova got its event;
the seconds until Placement holds what Cyborg's database says (each
provider's inventory, reserved and usages); the ARQs still BindStarted or
Deleting, unchanged since the fault ended, once it settled (stuck); attach
handles held by two ARQs (shared) or in use with no ARQ (leaked); and the
log lines per second of every service during the fault. After the kill
it prints how long the takeover took against ``takeover_after + 10 s``.
The exit status is 1 when a boot was lost or an ARQ stuck, a handle
shared or leaked, or ARQs were left behind once every instance was gone.

Usage: python tools/bench/chaos.py [--conductors 3] [--agents 20]
[--boots 200] [--devices 4] [--down 10] [--placement-down 60]
[--takeover-after 30] [--heartbeat-interval 5] [--warmup 20]
[--resolve-timeout 300] [--json PATH] [--logs DIR]
"""

import argparse
import json
import logging
import os
import shlex
import signal
import sys
import tempfile
import time

# NOTE(bench): helpers beside this script (its directory is on sys.path).
import _boots
import _faults
import _rounds
import _stack
import _workdir
from api_v2 import create_profile
import bootstorm
from oslo_config import cfg
import requests

from cyborg import rpc
from cyborg.tests import deployments

CONF = cfg.CONF
TAKEOVER_SLACK = 10
FAULTS = ('conductor kill -9', 'RabbitMQ restart', 'database restart',
          'Placement down')


def inject_kill(run):
    """SIGKILL the busiest conductor; start it again after the takeover."""
    names = {'bench-ctl-%d' % (i + 1): proc
             for i, proc in enumerate(run.stack.conductors)}
    victim, held = 'bench-ctl-1', 0
    deadline = time.monotonic() + 60
    # NOTE(bench): binds finish within milliseconds when the conductors
    # keep up, so the one found busiest may be done when a signal lands:
    # it is frozen (SIGSTOP) first and let go again when it holds nothing.
    while time.monotonic() < deadline:
        owners = {h: n for h, n in (run.probe.owners() or {}).items()
                  if h in names}
        if owners:
            victim = max(owners, key=owners.get)
            names[victim].proc.send_signal(signal.SIGSTOP)
            held = (run.probe.owners() or {}).get(victim, 0)
            if held:
                break
            names[victim].proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    proc = names[victim]
    proc.proc.send_signal(signal.SIGKILL)
    proc.proc.wait()
    limit = run.args.takeover_after + TAKEOVER_SLACK
    taken = _faults.wait_until(
        lambda: (run.probe.owners() or {victim: 1}).get(victim, 0) == 0,
        limit + 60)
    run.takeover = {'conductor': victim, 'held': held,
                    'seconds': None if taken is None else round(taken, 1),
                    'limit': limit}
    print('  killed %s holding %d ARQs; its work %s' % (
        victim, held, 'none to take over' if not held else
        'was never taken over' if taken is None else
        'taken over after %.1f s (limit %d s)' % (taken, limit)),
        flush=True)
    proc.start()
    run.stack.wait_conductor(proc)


def inject_rabbit(run):
    run.rabbit.stop()
    time.sleep(run.args.down)
    run.rabbit.start()


def inject_database(run):
    run.db.stop()
    time.sleep(run.args.down)
    run.db.start()


def inject_placement(run):
    for proc in run.stack.placements:
        proc.stop()
    time.sleep(run.args.placement_down)
    for proc in run.stack.placements:
        proc.start()
    for proc in run.stack.placements:
        proc.wait_listening()


class Run:
    """One bench run on its stack; ``rows`` are the faults' figures."""

    def __init__(self, args, stack, db, rabbit, probe, boots, workdir):
        self.args = args
        self.stack = stack
        self.db = db
        self.rabbit = rabbit
        self.probe = probe
        self.boots = boots
        self.workdir = workdir
        self.takeover = None
        self.rows = []
        self.counted = set()

    def fault(self, name, inject):
        print('%s ...' % name, flush=True)
        # NOTE(bench): a change for the agents to bring to Placement while
        # the fault lasts.
        CONF.set_override('device_count', CONF.fake_driver.device_count + 1,
                          group='fake_driver')
        lines, start = _faults.log_lines(self.workdir), time.monotonic()
        inject(self)
        end = time.monotonic()
        timeout = self.args.resolve_timeout
        placement = _faults.wait_until(self.probe.placement_true, timeout)
        _faults.wait_until(lambda: all(
            b.resolved is not None or b.lost is not None
            for b in self.boots.window(start, end)), timeout + 60, 0.5)
        settled = time.monotonic()
        # NOTE(bench): a boot lost in an earlier fault is still unresolved
        # now; it counts once, where it was lost.
        window = [b for b in self.boots.window(start, end)
                  if id(b) not in self.counted]
        self.counted.update(id(b) for b in window if b.lost is not None)
        resolved = [b.resolved for b in window if b.resolved is not None]
        lost = [b for b in window if b.lost is not None]
        stuck = self.probe.transitional(time.monotonic() - end) or ()
        row = {
            'fault': name, 'failed': dict(self.boots.failures(start,
                                                              settled)),
            'boots': len(window),
            'resolved_s': round(max(resolved, default=end) - start, 1)
            if not lost else None,
            'placement_s': None if placement is None else
            round(end + placement - start, 1),
            'lost': len(lost), 'lost_why': sorted({b.lost for b in lost}),
            'lost_arqs': [self.probe.arqs(b.arqs) for b in lost[:5]],
            'stuck': len(stuck), 'stuck_rows': [list(r) for r in stuck[:5]],
            'shared': self.probe.shared(), 'leaked': self.probe.leaked(),
            'log_lines_per_s': round((_faults.log_lines(self.workdir) -
                                      lines) / (settled - start), 1),
            'fault_s': round(end - start, 1),
        }
        self.rows.append(row)
        print('  %s' % json.dumps(row), flush=True)
        self.boots.targets = self.probe.targets() or self.boots.targets


def _wait_placement(probe, hosts, devices):
    def ready():
        targets = probe.targets() or ()
        return len(targets) == hosts * devices and probe.placement_true()
    if _faults.wait_until(ready, 300) is None:
        raise _stack.Failed('the agents never brought their devices to '
                            'Placement')


def run_bench(args, workdir):
    result = {}
    hosts = ['chaos-%d' % i for i in range(args.agents)]
    CONF.set_override('state_path', workdir)
    CONF.set_override('device_count', args.devices, group='fake_driver')
    handler = logging.FileHandler(os.path.join(workdir, 'agents.log'))
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(process)d %(levelname)s %(name)s %(message)s'))
    logging.getLogger().addHandler(handler)
    sections = {'conductor': {'takeover_after': args.takeover_after,
                              'heartbeat_interval': args.heartbeat_interval}}
    try:
        with _faults.PrivateMariaDB(workdir) as db, \
                _faults.PrivateRabbit(workdir) as rabbit, \
                deployments.FakeNova() as nova:
            sections['nova'] = nova.section()
            stack = _stack.Stack(workdir, hosts, args.conductors, print,
                                 db_url=db.url, transport_url=rabbit.url,
                                 sections=sections)
            with stack:
                try:
                    result = _run(args, stack, db, rabbit, nova, hosts,
                                  workdir)
                finally:
                    rpc.cleanup()
            result['logged_errors'] = stack.problems
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
        _workdir.copy_logs(workdir, args.logs)
    return result


def _run(args, stack, db, rabbit, nova, hosts, workdir):
    CONF.set_override('transport_url', stack.transport_url)
    rpc.init(CONF)
    agents = [_rounds.Agent(host, stack.placement.url) for host in hosts]
    reporting = _boots.Reporting(agents, args.report_interval)
    reporting.start()
    probe = _faults.Probe(db.url, stack.placement_db)
    try:
        _wait_placement(probe, len(hosts), args.devices)
        with requests.Session() as http:
            create_profile(http, stack.api_url)
        boots = _boots.Boots(stack.api_url, nova, args.boots,
                             args.resolve_timeout)
        boots.start(probe.targets())
        print('%d boots in flight on %d hosts; warming up %d s' % (
            args.boots, len(hosts), args.warmup), flush=True)
        time.sleep(args.warmup)
        run = Run(args, stack, db, rabbit, probe, boots, workdir)
        for name, inject in zip(FAULTS, (inject_kill, inject_rabbit,
                                         inject_database, inject_placement),
                                strict=True):
            run.fault(name, inject)
        running = boots.stop(args.resolve_timeout)
        final = {
            'boots_still_running': running,
            'instances': len(boots.boots),
            'lost_total': sum(b.lost is not None for b in boots.boots),
            'left': _faults.wait_until(lambda: probe.left() == {}, 60),
            'left_states': probe.left(), 'shared': probe.shared(),
            'leaked': probe.leaked(),
            'orphans': len(probe._query(
                'SELECT id FROM accelerator_requests WHERE instance_uuid IS '
                'NULL') or ()),
            'agent_report_errors': dict(reporting.errors),
        }
        return {'rows': run.rows, 'takeover': run.takeover, 'final': final}
    finally:
        reporting.stop()
        probe.close()


def _failed_cell(failed):
    return ', '.join('%s: %d' % kv for kv in sorted(failed.items())) or '0'


def table(result):
    head = ['Fault', 'Lasted (s)', 'Failed requests',
            'All resolved, Nova told (s)', 'Placement true (s)', 'Stuck',
            'Shared / leaked', 'Log lines/s', 'Lost']
    rows = [[r['fault'], '%.1f' % r['fault_s'],
             _failed_cell(r['failed']),
             '-' if r['resolved_s'] is None else '%.1f' % r['resolved_s'],
             'never' if r['placement_s'] is None else '%.1f'
             % r['placement_s'], str(r['stuck']),
             '%s / %s' % (r['shared'], r['leaked']),
             '%.0f' % r['log_lines_per_s'],
             '%d of %d' % (r['lost'], r['boots'])] for r in result['rows']]
    lines = ['.. list-table:: Chaos bench', '   :header-rows: 1', '']
    for row in [head] + rows:
        lines.append('   * - %s' % row[0])
        lines.extend('     - %s' % cell for cell in row[1:])
    return '\n'.join(lines)


def failures(result):
    found = []
    for row in result.get('rows', ()):
        for key in ('lost', 'stuck', 'shared', 'leaked'):
            if row[key]:
                found.append('%s: %s %s' % (row['fault'], row[key], key))
    takeover = result.get('takeover')
    if takeover and takeover['held'] and (
            takeover['seconds'] is None or
            takeover['seconds'] > takeover['limit']):
        found.append('takeover took %s s (limit %d s)' % (
            takeover['seconds'], takeover['limit']))
    final = result.get('final') or {}
    for key in ('boots_still_running', 'lost_total', 'shared', 'leaked'):
        if final.get(key):
            found.append('in the end: %s %s' % (final[key], key))
    if final and final.get('left') is None:
        found.append('in the end: ARQs of deleted instances left: %s'
                     % final.get('left_states'))
    return found


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add('--conductors', type=int, default=3, help='conductor processes')
    add('--agents', type=int, default=20, help='simulated compute hosts')
    add('--boots', type=int, default=200, help='Nova boots in flight')
    add('--devices', type=int, default=4,
        help='fake devices per host at the start (4 handles each)')
    add('--down', type=float, default=10,
        help='seconds RabbitMQ and the database stay stopped')
    add('--placement-down', type=float, default=60,
        help='seconds Placement stays stopped')
    add('--takeover-after', type=int, default=30,
        help='[conductor] takeover_after of the conductors')
    add('--heartbeat-interval', type=int, default=5,
        help='[conductor] heartbeat_interval of the conductors')
    add('--report-interval', type=float, default=5,
        help='seconds between two reports of an agent')
    add('--warmup', type=float, default=20,
        help='seconds of boots before the first fault')
    add('--resolve-timeout', type=int, default=300,
        help='seconds a boot may wait for its ARQs before it is lost')
    add('--json', metavar='PATH', help='write every figure to PATH')
    add('--logs', metavar='DIR', help='copy every log to DIR')
    args = parser.parse_args()
    for name in ('conductors', 'agents', 'boots', 'devices'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    if args.conductors < 2:
        parser.error('--conductors must be at least 2: a survivor takes '
                     'over the killed one\'s work')
    if args.takeover_after < 2 * args.heartbeat_interval:
        parser.error('--takeover-after must be at least twice '
                     '--heartbeat-interval')
    return args


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, bootstorm._stop_on_sigterm)
    bootstorm.configure_agents(args.boots)
    try:
        with tempfile.TemporaryDirectory(prefix='cyborg-chaos-') as workdir:
            result = run_bench(args, workdir)
    except KeyboardInterrupt:
        print('Interrupted; everything started was stopped and removed.')
        return 130
    found = failures(result)
    print()
    print(table(result))
    print()
    takeover = result['takeover']
    print('Takeover after the kill: %s (takeover_after + %d s = %d s)' % (
        'no work held' if not takeover['held'] else 'never'
        if takeover['seconds'] is None else '%.1f s' % takeover['seconds'],
        TAKEOVER_SLACK, takeover['limit']))
    final = result['final']
    print('In the end: %d instances booted and deleted, %d boots lost; '
          'ARQs left %s; shared %s, leaked %s; %d ARQs whose create answer '
          'was lost (no instance); agent reports that raised: %s' % (
              final['instances'], final['lost_total'],
              final['left_states'], final['shared'], final['leaked'],
              final['orphans'], final['agent_report_errors'] or 0))
    if result['logged_errors']:
        print('The services logged (not judged): %d kinds of error, e.g. %s'
              % (len(result['logged_errors']),
                 result['logged_errors'][0][:300]))
    for line in found:
        print('FAILED: %s' % line)
    command = bootstorm._PASSWORD.sub(r'\1***@',
                                      shlex.join(['python'] + sys.argv))
    machine = bootstorm.machine({})
    print()
    print('Command: %s' % command)
    print('Machine: %d CPUs (%s)' % (machine['nproc'], machine['cpu']))
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(dict(result, command=command, machine=machine,
                           failures=found), out, indent=2)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
