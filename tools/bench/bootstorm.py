"""Benchmark: N compute hosts' agents report at once to real services.

For each number of hosts N (``--hosts``, default 10,100,300,1000) a fresh
deployment runs as real processes: ``--conductors`` cyborg-conductor
processes on a new MariaDB database (schema by ``cyborg-dbsync upgrade``)
sharing the RPC topic of a new RabbitMQ vhost, one cyborg-api (noauth),
and the real openstack-placement served by ``--placement-workers``
processes sharing one port on a new PostgreSQL database. Nothing but the
conductors uses the MariaDB database, so the server's global
``Questions`` counter (less the bench's own probe queries) is the
conductors' SQL statements: on a MariaDB server that nobody else uses
meanwhile. The bench measures how busy the server
is while everything is idle and prints it; a busy one inflates the SQL
figures.

In the bench process, N agents run the real code path: one
``cyborg.agent.manager.AgentManager`` per host ``bench-<n>``, with the fake
driver (``--devices`` devices of one deployable with 4 attach handles, a
resource class and a trait each), RPC to the conductors over the vhost and
a ``ProviderTree`` writing to the Placement process under the compute node
provider that the set-up created (as Nova would). The rounds, each with
every agent calling ``report()`` at once through ``--concurrency`` threads
(a report that returns a retry delay is run again after it, as the agent's
periodic loop would; one that raises is a failure, run again after 1 s):

1. bootstorm: every host's first report (which also heals Placement, as
   an agent's first pass does);
2. steady: every host reports again, unchanged;
3. GET /v2/deployables and GET /v2/devices through cyborg-api,
   ``--requests`` each, one at a time (sent without a microversion: the
   whole list in one page);
4. teardown: every device is gone (device_count 0); every host reports.

Each round prints the seconds until every report returned and the rows
(Cyborg's database) and providers (Placement's database) were right; the
seconds until the last conductor call returned (the database side alone,
as far as it can be told apart: an agent calls the conductor before
Placement, so with fewer threads than hosts the last agents start, and
call the conductor, only once Placement has served the others); the SQL
statements and Placement requests per host, the retries, and the CPU
seconds of each process and of the machine's other work. The targets
are printed as met or not met; the exit status is non-zero only for
correctness failures (rows missing or duplicated, errors in a process's
log, a host that never converged). Beside the converge target it prints
Placement's floor: the CPU seconds the Placement processes spent in the
bootstorm divided by the machine's CPUs, the shortest the bootstorm could
take on this machine if nothing but Placement ran.

Usage: python tools/bench/bootstorm.py [--hosts 10,100,300,1000]
[--devices 8] [--concurrency 64] [--conductors 1] [--placement-workers 2]
[--requests 50]
[--kill-conductor-after SECONDS] [--round-timeout 1800]
[--plot PATH.png] [--json PATH] [--logs DIR] [--no-placement]
[--keep-going] [--verbose]
"""

import argparse
import collections
import importlib.util
import json
import logging
import math
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time

# NOTE(bench): helpers beside this script (its directory is on sys.path).
import _rounds
import _stack
from oslo_config import cfg

import cyborg  # noqa: F401 (selects the threading backend)
from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import objects
from cyborg import rpc
from cyborg.objects import base as objects_base
from cyborg.objects import indirection
from cyborg.tests import backends

CONF = cfg.CONF
MAX_LINES = 12
TARGET_CONVERGE_S, TARGET_CONVERGE_HOSTS = 60, 1000
TARGET_SQL = 30
TARGET_STEADY_SQL = 1
TARGET_GET_MS, TARGET_GET_ROWS = 100, 2401
_PASSWORD = re.compile(r'(://[^:/@\s]+:)[^@\s]*@')
VERSIONS = {}
RABBIT = 'oslo_messaging_rabbit'
#: Statements per second idle conductors may send (their own heartbeat).
IDLE_SQL = 5


class LogCounter(logging.Handler):
    """Counts the bench's own (the agents') error records."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.found = collections.Counter()

    def emit(self, record):
        self.found['%s %s' % (record.name, record.getMessage()[:160])] += 1


def run_hosts(n, args, failures):
    """Every round for ``n`` hosts on a fresh stack; returns the figures.
    """
    hosts = ['bench-%d' % i for i in range(n)]
    began = time.monotonic()
    print()
    print('%d hosts x %d devices (%d deployables, %d attach handles), %d '
          'conductor(s), concurrency %d' % (
              n, args.devices, n * args.devices,
              n * args.devices * _rounds.HANDLES, args.conductors,
              args.concurrency), flush=True)
    result = {'hosts': n, 'devices': n * args.devices}
    with tempfile.TemporaryDirectory(prefix='cyborg-bootstorm-') as workdir:
        CONF.set_override('state_path', workdir)
        CONF.set_override('device_count', args.devices, group='fake_driver')
        root = logging.getLogger()
        handlers = [logging.FileHandler(os.path.join(workdir,
                                                     'agents.log')),
                    LogCounter()]
        handlers[0].setFormatter(logging.Formatter(
            '%(asctime)s %(process)d %(levelname)s %(name)s %(message)s'))
        for handler in handlers:
            root.addHandler(handler)
        stack = _stack.Stack(workdir, hosts, args.conductors, print,
                             args.placement_workers)
        try:
            with stack:
                try:
                    _run_rounds(stack, hosts, args, result, failures)
                finally:
                    # NOTE(bench): the transport dies with the vhost.
                    rpc.cleanup()
        finally:
            failures.extend(stack.problems)
            if args.logs:
                _keep_logs(workdir, os.path.join(args.logs, str(n)))
            for handler in handlers:
                root.removeHandler(handler)
                handler.close()
    errors = handlers[1].found
    if errors:
        result['agent_errors'] = dict(errors)
        print('  The agents logged %d errors:' % sum(errors.values()))
        for line, count in errors.most_common(6):
            print('  %5d x %s' % (count, line))
    for line in failures[:MAX_LINES]:
        print('  FAILED: %s' % line)
    if len(failures) > MAX_LINES:
        print('  FAILED: ... and %d more (see --json)' % (
            len(failures) - MAX_LINES))
    result['seconds'] = round(time.monotonic() - began, 1)
    print('  (%d hosts: %.0f s in all, set-up and teardown included)' % (
        n, result['seconds']), flush=True)
    return result


def _keep_logs(workdir, target):
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(workdir):
        if name.endswith('.log'):
            shutil.copy(os.path.join(workdir, name), target)


def _run_rounds(stack, hosts, args, result, failures):
    VERSIONS.update(mariadb=stack.sql.version(),
                    postgresql=stack.placement_probe.version())
    mark = stack.sql.mark()
    time.sleep(2)
    idle = stack.sql.since(mark)[0] / 2
    others = stack.sql.other_clients()
    result['idle_sql_per_s'] = round(idle, 1)
    print('  MariaDB while idle: %.1f statements/s; %d connections to '
          'other databases%s' % (
              idle, others, ' (the SQL figures include other clients\' '
              'statements)' if idle > IDLE_SQL or others else ''))
    CONF.set_override('transport_url', stack.transport_url)
    rpc.init(CONF)
    start = time.monotonic()
    url = None if args.no_placement else stack.placement.url
    agents = [_rounds.Agent(host, url) for host in hosts]
    print('  %d agents built in %.1f s' % (len(agents),
                                          time.monotonic() - start),
          flush=True)
    run = _rounds.Run(stack, agents, args, failures)
    result['bootstorm'] = run.round('bootstorm', args.kill_conductor_after)
    result['steady'] = run.round('steady')
    rows = len(hosts) * args.devices
    result['get_deployables'] = run.gets('/v2/deployables', 'deployables',
                                         rows)
    result['get_devices'] = run.gets('/v2/devices', 'devices', rows)
    CONF.set_override('device_count', 0, group='fake_driver')
    result['teardown'] = run.round('teardown')


# --- Summary ----------------------------------------------------------------

def _get_cell(get):
    return '%.0f / %.0f' % (get['p50_ms'], get['p90_ms']) if get else '-'


def _value(item, round_name, key, form='%.1f'):
    value = (item.get(round_name) or {}).get(key)
    return '-' if value is None else form % value


def summary_table(results, args):
    head = ['Hosts', 'Devices', 'Converge (s)', 'DB-only (s)', 'SQL/host',
            'Placement req/host', 'Steady SQL/host',
            'Steady Placement req/host', 'GET deployables p50 / p90 (ms)',
            'GET devices p50 / p90 (ms)']
    rows = [[str(r['hosts']), str(r['devices']),
             _value(r, 'bootstorm', 'converge_s'),
             _value(r, 'bootstorm', 'db_converge_s'),
             _value(r, 'bootstorm', 'sql_per_host'),
             _value(r, 'bootstorm', 'placement_per_host'),
             _value(r, 'steady', 'sql_per_host', '%.2f'),
             _value(r, 'steady', 'placement_per_host', '%.2f'),
             _get_cell(r.get('get_deployables')),
             _get_cell(r.get('get_devices'))] for r in results]
    lines = ['.. list-table:: Bootstorm: %d devices per host, %d '
             'conductor(s), %d agents at once' % (
                 args.devices, args.conductors, args.concurrency),
             '   :header-rows: 1', '']
    for row in [head] + rows:
        lines.append('   * - %s' % row[0])
        lines.extend('     - %s' % cell for cell in row[1:])
    return '\n'.join(lines)


def targets(results):
    """(target, figures, met) for each; met is None where not measured."""
    found = []
    big = [r for r in results if r['hosts'] >= TARGET_CONVERGE_HOSTS and
           r.get('bootstorm')]
    found.append((
        'converge <= %d s for %s hosts' % (TARGET_CONVERGE_S,
                                           f'{TARGET_CONVERGE_HOSTS:,}'),
        '; '.join('%d hosts: %s s' % (
            r['hosts'], _value(r, 'bootstorm', 'converge_s'))
            for r in big) or 'no run of that many hosts',
        all((r['bootstorm']['converge_s'] or math.inf) <= TARGET_CONVERGE_S
            for r in big) if big else None))
    floors = [r for r in big if r['bootstorm'].get('placement_requests')]
    if floors:
        found.append((
            'Placement\'s floor for %s hosts (its CPU seconds / %d CPUs)' % (
                f'{TARGET_CONVERGE_HOSTS:,}', os.cpu_count()),
            '; '.join('%d hosts: %.0f s' % (
                r['hosts'], placement_floor(r['bootstorm']))
                for r in floors),
            all(placement_floor(r['bootstorm']) <= TARGET_CONVERGE_S
                for r in floors)))
    boot = [r for r in results if r.get('bootstorm')]
    found.append((
        '<= %d SQL statements per host for the bootstorm' % TARGET_SQL,
        '; '.join('%d hosts: %.1f' % (r['hosts'],
                                      r['bootstorm']['sql_per_host'])
                  for r in boot) or 'not measured',
        all(r['bootstorm']['sql_per_host'] <= TARGET_SQL for r in boot)
        if boot else None))
    steady = [r for r in results if r.get('steady')]
    found.append((
        'steady state <= %d SQL statement per host and 0 Placement '
        'requests' % TARGET_STEADY_SQL,
        '; '.join('%d hosts: %.2f SQL, %d requests' % (
            r['hosts'], r['steady']['sql_per_host'],
            r['steady']['placement_requests']) for r in steady)
        or 'not measured',
        all(r['steady']['sql_per_host'] <= TARGET_STEADY_SQL and
            r['steady']['placement_requests'] == 0 for r in steady)
        if steady else None))
    # NOTE(bench): the target is set at upstream's 2,401 rows (300 hosts);
    # a list of many more rows is measured, not judged against it.
    gets = [r for r in results if r.get('get_deployables') and
            abs(r['get_deployables']['rows'] - TARGET_GET_ROWS) <=
            TARGET_GET_ROWS / 10]
    found.append((
        'GET /v2/deployables with about %s rows <= %d ms median' % (
            f'{TARGET_GET_ROWS:,}', TARGET_GET_MS),
        '; '.join('%d rows: %.1f ms' % (r['get_deployables']['rows'],
                                        r['get_deployables']['p50_ms'])
                  for r in gets) or 'no run with that many rows',
        all(r['get_deployables']['p50_ms'] <= TARGET_GET_MS
            for r in gets) if gets else None))
    return found


def placement_floor(round_result):
    """Seconds Placement's own CPU time takes on every CPU of the machine.
    """
    return round_result['cpu_s']['Placement'] / os.cpu_count()


def plot(results, path):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    def series(round_name, key):
        return [float('nan') if (r.get(round_name) or {}).get(key) is None
                else r[round_name][key] for r in done]

    done = [r for r in results if r.get('bootstorm')]
    hosts = [r['hosts'] for r in done]
    fig, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4.5))
    left.plot(hosts, series('bootstorm', 'converge_s'), 'o-',
              label='converged (conductors and Placement)')
    left.plot(hosts, series('bootstorm', 'db_converge_s'), 's--',
              label='last conductor call returned')
    left.plot([TARGET_CONVERGE_HOSTS], [TARGET_CONVERGE_S], 'k*',
              markersize=10, label='target')
    left.set_ylabel('seconds')
    left.set_title('Bootstorm: time to converge')
    right.plot(hosts, series('bootstorm', 'sql_per_host'), 'o-',
               label='bootstorm')
    right.plot(hosts, series('steady', 'sql_per_host'), 's--',
               label='steady')
    right.axhline(TARGET_SQL, color='grey', linestyle=':',
                  label='bootstorm target')
    right.axhline(TARGET_STEADY_SQL, color='grey', linestyle='-.',
                  label='steady target')
    right.set_ylabel('SQL statements per host')
    right.set_title('Conductors\' SQL statements per host')
    for axes in (left, right):
        axes.set_xscale('log')
        axes.set_xlabel('hosts')
        axes.grid(True, which='both', alpha=0.3)
        axes.set_ylim(bottom=0)
        axes.legend(fontsize='small')
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def machine(versions):
    model = ''
    try:
        with open('/proc/cpuinfo') as info:
            model = next((line.split(':', 1)[1].strip() for line in info
                          if line.startswith('model name')), '')
    except OSError:
        pass
    return dict(versions, nproc=os.cpu_count(), cpu=model)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', default='10,100,300,1000',
                        help='comma-separated numbers of hosts')
    parser.add_argument('--devices', type=int, default=8,
                        help='fake devices per host')
    parser.add_argument('--concurrency', type=int, default=64,
                        help='agents reporting at the same time')
    parser.add_argument('--conductors', type=int, default=1,
                        help='cyborg-conductor processes')
    parser.add_argument('--placement-workers', type=int, default=2,
                        help='Placement processes serving its port (as the '
                             'worker processes of uWSGI or mod_wsgi)')
    parser.add_argument('--requests', type=int, default=50,
                        help='GET requests of each list')
    parser.add_argument('--kill-conductor-after', type=float,
                        metavar='SECONDS',
                        help='SIGKILL a conductor that many seconds into '
                             'the bootstorm, and start it again')
    parser.add_argument('--round-timeout', type=int, default=1800,
                        help='seconds a round may take before its '
                             'unfinished hosts count as never converged')
    parser.add_argument('--plot', metavar='PATH.png',
                        help='plot converge seconds and SQL statements per '
                             'host against the number of hosts')
    parser.add_argument('--json', metavar='PATH',
                        help='write every figure to PATH')
    parser.add_argument('--logs', metavar='DIR',
                        help='copy the processes\' and agents\' logs to '
                             'DIR/<hosts>/')
    parser.add_argument('--no-placement', action='store_true',
                        help='agents that do not use Placement: what '
                             'Cyborg alone costs (the converge time is '
                             'then until every row is in the database)')
    parser.add_argument('--keep-going', action='store_true',
                        help='go on with the next number of hosts after a '
                             'correctness failure')
    parser.add_argument('--verbose', action='store_true',
                        help='Placement requests per kind')
    args = parser.parse_args()
    try:
        args.host_counts = [int(n) for n in args.hosts.split(',') if n]
    except ValueError:
        parser.error('--hosts takes numbers separated by commas')
    if not args.host_counts or min(args.host_counts) < 1:
        parser.error('--hosts needs at least one number, each at least 1')
    for name in ('devices', 'concurrency', 'conductors', 'requests',
                 'placement_workers'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name.replace('_', '-'))
    if args.plot and importlib.util.find_spec('matplotlib') is None:
        parser.error('--plot needs matplotlib (pip install matplotlib)')
    if args.devices > 200:
        parser.error('--devices must be at most 200 (PCI buses of the '
                     'fake driver)')
    return args


def _stop_on_sigterm(_signo, _frame):
    raise KeyboardInterrupt


def configure_agents(concurrency):
    """This process's options and RPC, as the in-process agents need them.
    """
    rpc.set_defaults()
    CONF([], project='cyborg', default_config_files=[])
    rpc.register_opts(CONF)
    objects.register_all()
    # NOTE(bench): as cyborg-agent: every object method runs in a conductor.
    objects_base.CyborgObject.indirection_api = (
        indirection.ConductorIndirectionAPI())
    CONF.set_override('enabled_drivers', ['fake_driver'], group='agent')
    CONF.set_override('report_interval', 3600, group='agent')
    # NOTE(bench): 0 heals only at start: the bootstorm's first report.
    CONF.set_override('placement_heal_interval', 0, group='agent')
    CONF.set_override('accelerators_per_device', _rounds.HANDLES,
                      group='fake_driver')
    # NOTE(bench): every agent shares this process's transport, where each
    # real agent has its own; its pool must not make them queue.
    # NOTE(bench): imported once cyborg has silenced eventlet's banner.
    from oslo_messaging import opts as messaging_opts
    CONF.register_opts(dict(messaging_opts.list_opts())[RABBIT],
                       group=RABBIT)
    CONF.set_override('rpc_conn_pool_size', max(30, concurrency),
                      group=RABBIT)
    logging.getLogger().setLevel(logging.WARNING)


def main():
    args = parse_args()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    configure_agents(args.concurrency)

    results, failed = [], False
    try:
        for n in args.host_counts:
            failures = []
            try:
                results.append(run_hosts(n, args, failures))
            except (_stack.Failed, backends.BackendUnavailable,
                    AssertionError) as exc:
                failures.append(str(exc))
                print('  FAILED: %s' % exc)
                results.append({'hosts': n, 'devices': n * args.devices,
                                'failures': failures})
            results[-1]['failures'] = failures
            failed |= bool(failures)
            if failures and not args.keep_going:
                print('Stopping (correctness failure; --keep-going goes on)')
                break
    except KeyboardInterrupt:
        print('Interrupted; everything started was stopped and removed.')
        return 130

    found = machine(VERSIONS)
    print()
    print(summary_table(results, args))
    print()
    print('Targets:')
    met = targets(results)
    for what, figures, ok in met:
        print('  %s: %s: %s' % (what, figures, {
            True: 'met', False: 'NOT met', None: 'not measured'}[ok]))
    command = _PASSWORD.sub(r'\1***@', shlex.join(['python'] + sys.argv))
    print()
    print('Command: %s' % command)
    print('Machine: %d CPUs (%s), MariaDB %s, PostgreSQL %s' % (
        found['nproc'], found['cpu'] or '?', found.get('mariadb', '?'),
        found.get('postgresql', '?')))
    if args.json:
        with open(args.json, 'w') as out:
            json.dump({'command': command, 'machine': found,
                       'options': {k: v for k, v in vars(args).items()
                                   if k != 'host_counts'},
                       'results': results,
                       'targets': [{'target': w, 'figures': f, 'met': ok}
                                   for w, f, ok in met],
                       'correct': not failed}, out, indent=2)
        print('Figures: %s' % args.json)
    if args.plot:
        plot(results, args.plot)
        print('Plot: %s' % args.plot)
    if failed:
        print('Correctness failures: see FAILED above.')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
