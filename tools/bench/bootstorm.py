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
statements and Placement requests per host, the retries, the CPU
seconds of each process and of the machine's other work, and each
conductor's peak resident memory during the round (``VmHWM``, started
over at each round through ``/proc/<pid>/clear_refs``). The targets
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
[--keep-going] [--verbose] [--set SECTION.OPTION=VALUE ...]
"""

import argparse
import collections
import importlib.util
import json
import logging
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
import _summary
from oslo_config import cfg

import cyborg  # noqa: F401 (selects the threading backend)
from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import objects
from cyborg import rpc
from cyborg.conductor import indirection_client
from cyborg.objects import base as objects_base
from cyborg.tests import backends

CONF = cfg.CONF
MAX_LINES = 12
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
                             args.placement_workers,
                             sections=_sections(args.set))
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
    parser.add_argument('--set', action='append', default=[],
                        metavar='SECTION.OPTION=VALUE',
                        help='an option of the services\' configuration '
                             'files (repeatable), e.g. '
                             'conductor.report_batch_delay=0.1')
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


def _sections(settings):
    """``{section: {option: value}}`` of ``--set`` arguments."""
    sections = {}
    for setting in settings:
        name, sep, value = setting.partition('=')
        section, dot, option = name.partition('.')
        if not (sep and dot and section and option):
            raise SystemExit('--set %s: expected SECTION.OPTION=VALUE'
                             % setting)
        sections.setdefault(section, {})[option] = value
    return sections


def configure_agents(concurrency):
    """This process's options and RPC, as the in-process agents need them.
    """
    rpc.set_defaults()
    CONF([], project='cyborg', default_config_files=[])
    rpc.register_opts(CONF)
    objects.register_all()
    # NOTE(bench): as cyborg-agent: every object method runs in a conductor.
    objects_base.CyborgObject.indirection_api = (
        indirection_client.ConductorIndirectionAPI())
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
    print(_summary.summary_table(results, args))
    print()
    print('Targets:')
    met = _summary.targets(results, args)
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
        _summary.plot(results, args.plot)
        print('Plot: %s' % args.plot)
    if failed:
        print('Correctness failures: see FAILED above.')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
