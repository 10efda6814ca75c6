"""Bench: the API's throughput while one conductor hangs or the broker is down.

It starts ``--conductors`` cyborg-conductor processes and one cyborg-api
(noauth) on a MariaDB server and a RabbitMQ node of its own (the
machine's shared servers are never stopped), and ``--clients`` threads
that each run, over and over, what a tenant and Nova do most: list the
accelerator requests, create one from a device profile, delete it. Then,
one after the other:

1. ``baseline``: ``--baseline`` seconds with every part well;
2. ``hung conductor``: one conductor SIGSTOPped for ``--hang`` seconds
   (a process that is neither dead nor answering: swapped out, stuck in
   the kernel, paused by a debugger), then SIGCONT;
3. ``after the hang``: ``--settle`` seconds;
4. ``broker down``: the RabbitMQ node stopped for ``--down`` seconds;
5. ``broker back``: from its restart, ``--settle`` seconds.

For each phase it prints the requests by HTTP status (and client
timeouts), the successful requests per second and that figure against
the baseline's, and the p50/p99 latency of reads and creates. For the
broker outage it also prints the longest a request took to fail (each
must fail within ``[api] rpc_timeout``) and the seconds from the
broker's restart until the first success and until a whole second ran
at the baseline's throughput. At the end, every request the API
answered with an error must have left nothing: the ARQs still in the
database, none of which a client knows of, are orphans. Deadlines keep
most from being written; one whose reply was lost after its commit (the
broker went down) is left, and the conductors' orphan removal
(``[conductor] orphan_arq_age``, ``--orphan-age`` seconds here) must take
it: the bench waits for that and counts what is still there.

Exits 1 on any 500, on orphans the removal left, or when the stack cannot
start; the
targets (hung conductor >= 80 % of the baseline's throughput, p99 <= 2 s;
503s within rpc_timeout; back within 10 s) are reported, not enforced.

Usage: python tools/bench/sick_parts.py [--conductors 3] [--clients 16]
[--baseline 20] [--hang 120] [--down 60] [--settle 20] [--orphan-age 15]
[--json PATH]
[--set SECTION.OPTION=VALUE ...] [--logs DIR] [--tiny]
"""

import argparse
import collections
import json
import signal
import sys
import threading
import time

# NOTE(bench): helpers beside this script (its directory is on sys.path).
import _faults
import _stack
import _timing
import _workdir
from api_v2 import PROFILE
from api_v2 import create_profile
import pymysql
import requests
from sqlalchemy.engine import make_url

from cyborg import rpc
from cyborg.tests.cluster import stack as cluster_stack

TARGET_RATIO = 0.8
TARGET_P99_S = 2.0
TARGET_BACK_S = 10.0
CLIENT_TIMEOUT = 60


class Load:
    """``clients`` threads running list, create, delete; every request
    recorded as (start, end, kind, status)."""

    def __init__(self, url, clients):
        self.url = url
        self.clients = clients
        self.records = []
        self.created = set()
        self.deleted = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []

    def start(self):
        for index in range(self.clients):
            thread = threading.Thread(target=self._loop, daemon=True,
                                      name='client-%d' % index)
            thread.start()
            self.threads.append(thread)

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(CLIENT_TIMEOUT + 10)

    def _request(self, http, kind, method, path, **kwargs):
        start = time.monotonic()
        try:
            response = http.request(method, self.url + path,
                                    timeout=CLIENT_TIMEOUT, **kwargs)
            status = response.status_code
        except requests.Timeout:
            response, status = None, 'timeout'
        except requests.RequestException:
            response, status = None, 'refused'
        with self.lock:
            self.records.append((start, time.monotonic(), kind, status))
        return response

    def _loop(self):
        arqs = '/v2/accelerator_requests'
        with requests.Session() as http:
            while not self.stopping.is_set():
                self._request(http, 'read', 'GET', arqs)
                created = self._request(
                    http, 'create', 'POST', arqs,
                    json={'device_profile_name': PROFILE})
                if created is None or created.status_code != 201:
                    continue
                uuids = [arq['uuid'] for arq in
                         created.json()['arqs']]
                with self.lock:
                    self.created.update(uuids)
                # NOTE(bench): a delete that fails is tried again, so
                # that every ARQ a client knows of is gone at the end.
                while not self.stopping.is_set() or uuids:
                    done = self._request(http, 'delete', 'DELETE', arqs,
                                         params={'arqs': ','.join(uuids)})
                    if done is not None and done.status_code in (204, 404):
                        with self.lock:
                            self.deleted.update(uuids)
                        break
                    time.sleep(0.5)

    def between(self, start, end):
        with self.lock:
            return [r for r in self.records if start <= r[0] < end]

    def known(self):
        """uuids of the ARQs a create answered."""
        with self.lock:
            return set(self.created)


def _phase(name, records, seconds, baseline_rate=None):
    statuses = collections.Counter(str(r[3]) for r in records)
    ok = sum(1 for r in records if r[3] in (200, 201, 204))
    rate = ok / seconds if seconds else 0.0
    row = {'phase': name, 'seconds': round(seconds, 1),
           'requests': dict(sorted(statuses.items())),
           'ok_per_s': round(rate, 1)}
    if baseline_rate:
        row['of_baseline'] = round(rate / baseline_rate, 2)
    for kind in ('read', 'create'):
        times = [r[1] - r[0] for r in records if r[2] == kind]
        if times:
            row['%s_p50_s' % kind] = round(_timing.quantile(times, 0.5), 3)
            row['%s_p99_s' % kind] = round(_timing.quantile(times, 0.99), 3)
    failed = [r[1] - r[0] for r in records if r[3] not in (200, 201, 204)]
    if failed:
        row['slowest_failure_s'] = round(max(failed), 2)
    return row


def _back_after(load, since, baseline_rate, horizon):
    """Seconds from ``since`` to the first success, and to the first
    whole second at the baseline's throughput; None where never."""
    first = full = None
    for second in range(int(horizon)):
        records = load.between(since + second, since + second + 1)
        ok = sum(1 for r in records if r[3] in (200, 201, 204))
        if ok and first is None:
            first = second + min(r[1] for r in records
                                 if r[3] in (200, 201, 204)) - \
                (since + second)
        if ok >= baseline_rate * TARGET_RATIO and full is None:
            full = second + 1
            break
    return (None if first is None else round(first, 1), full)


def _orphans(db_url, known):
    url = make_url(db_url)
    conn = pymysql.connect(host=url.host, port=url.port, user=url.username,
                           password=url.password or '',
                           database=url.database)
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT uuid FROM accelerator_requests')
            left = {row[0] for row in cur.fetchall()}
    finally:
        conn.close()
    return sorted(left - known), sorted(left & known)


def _run(args, stack, rabbit):
    rows = []
    with requests.Session() as http:
        create_profile(http, stack.api_url)
    load = Load(stack.api_url, args.clients)
    load.start()
    time.sleep(min(5, args.baseline))
    start = time.monotonic()
    time.sleep(args.baseline)
    base = _phase('baseline', load.between(start, time.monotonic()),
                  time.monotonic() - start)
    rows.append(base)
    rate = base['ok_per_s']
    victim = stack.conductors[0]
    print('SIGSTOP %s for %d s' % (victim.name, args.hang), flush=True)
    start = time.monotonic()
    victim.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(args.hang)
    finally:
        victim.proc.send_signal(signal.SIGCONT)
    rows.append(_phase('hung conductor', load.between(
        start, time.monotonic()), time.monotonic() - start, rate))
    start = time.monotonic()
    time.sleep(args.settle)
    rows.append(_phase('after the hang', load.between(
        start, time.monotonic()), time.monotonic() - start, rate))
    print('RabbitMQ down for %d s' % args.down, flush=True)
    start = time.monotonic()
    rabbit.stop()
    time.sleep(args.down)
    restart = time.monotonic()
    rows.append(_phase('broker down', load.between(start, restart),
                       restart - start, rate))
    rabbit.start()
    started = time.monotonic()
    time.sleep(args.settle)
    row = _phase('broker back', load.between(started, time.monotonic()),
                 time.monotonic() - started, rate)
    row['first_ok_after_s'], row['full_rate_after_s'] = _back_after(
        load, started, rate, args.settle)
    rows.append(row)
    load.stop()
    orphans, undeleted = _orphans(stack.db_url, load.created)
    # NOTE(bench): a create whose reply was lost (the broker went down
    # after the commit) leaves an ARQ no deadline can stop; the
    # conductors' orphan removal must take it within about twice its age.
    settled = cluster_stack.wait_until(
        lambda: not _orphans(stack.db_url, load.created)[0],
        2 * args.orphan_age + 10, interval=1)
    left = _orphans(stack.db_url, load.created)[0] if settled is None \
        else []
    return {'rows': rows, 'orphans': orphans, 'orphans_left': left,
            'undeleted': undeleted, 'requests': len(load.records)}


def _verdict(result, settle=None):
    """What an operator calls broken; ``settle``: the seconds watched
    after the broker's return (the return is judged when at least
    TARGET_BACK_S)."""
    problems = []
    back = result['rows'][-1] if result['rows'] else {}
    if settle is not None and settle >= TARGET_BACK_S and \
            back.get('phase') == 'broker back' and (
                back.get('full_rate_after_s') is None or
                back['full_rate_after_s'] > TARGET_BACK_S):
        problems.append('service not back at %.0f %% of the baseline '
                        'within %.0f s of the broker\'s return (%s s)' % (
                            100 * TARGET_RATIO, TARGET_BACK_S,
                            back.get('full_rate_after_s')))
    for row in result['rows']:
        if row['requests'].get('500'):
            problems.append('%s: %d x 500' % (row['phase'],
                                             row['requests']['500']))
    if result['orphans_left']:
        problems.append('%d orphan ARQs (created for requests the API '
                        'answered with an error) still there after the '
                        'orphan removal' % len(result['orphans_left']))
    if result['undeleted']:
        problems.append('%d ARQs a client created could not be deleted'
                        % len(result['undeleted']))
    return problems


def _report(result, args):
    print('\n%-16s %-34s %8s %6s %9s %9s %9s %9s' % (
        'phase', 'requests', 'ok/s', 'ratio', 'read p50', 'read p99',
        'crt p50', 'crt p99'))
    for row in result['rows']:
        print('%-16s %-34s %8s %6s %9s %9s %9s %9s' % (
            row['phase'], ' '.join('%s:%s' % item for item in
                                   row['requests'].items()),
            row['ok_per_s'], row.get('of_baseline', '-'),
            row.get('read_p50_s', '-'), row.get('read_p99_s', '-'),
            row.get('create_p50_s', '-'), row.get('create_p99_s', '-')))
    hung = result['rows'][1]
    down, back = result['rows'][3], result['rows'][4]
    print('\nhung conductor: %.0f %% of the baseline (target >= %.0f %%), '
          'p99 read %s s, create %s s (target <= %.1f s)' % (
              100 * hung.get('of_baseline', 0), 100 * TARGET_RATIO,
              hung.get('read_p99_s'), hung.get('create_p99_s'),
              TARGET_P99_S))
    print('broker down: slowest failure %s s (target <= rpc_timeout); '
          'back: first success after %s s, full rate after %s s (target '
          '<= %.0f s)' % (down.get('slowest_failure_s'),
                          back['first_ok_after_s'],
                          back['full_rate_after_s'], TARGET_BACK_S))
    print('%d requests; %d orphan ARQs at the end, %d after the orphan '
          'removal' % (result['requests'], len(result['orphans']),
                       len(result['orphans_left'])))


def _options(pairs):
    sections = {}
    for pair in pairs:
        name, _sep, value = pair.partition('=')
        section, _dot, option = name.rpartition('.')
        if not section or not option or not _sep:
            raise SystemExit('--set takes SECTION.OPTION=VALUE: %r' % pair)
        sections.setdefault(section, {})[option] = value
    return sections


def run_bench(args, workdir):
    sections = _options(args.set)
    sections.setdefault('conductor', {}).setdefault(
        'orphan_arq_age', str(args.orphan_age))
    try:
        with _faults.PrivateMariaDB(workdir) as db, \
                _faults.PrivateRabbit(workdir) as rabbit:
            stack = _stack.Stack(workdir, ['sick-0'], args.conductors, print,
                                 db_url=db.url, transport_url=rabbit.url,
                                 sections=sections)
            with stack:
                try:
                    result = _run(args, stack, rabbit)
                finally:
                    rpc.cleanup()
            result['logged_errors'] = stack.problems
    finally:
        _workdir.copy_logs(workdir, args.logs)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--conductors', type=int, default=3)
    parser.add_argument('--clients', type=int, default=16)
    parser.add_argument('--baseline', type=float, default=20)
    parser.add_argument('--hang', type=float, default=120)
    parser.add_argument('--down', type=float, default=60)
    parser.add_argument('--settle', type=float, default=20)
    parser.add_argument('--orphan-age', type=int, default=15,
                        help='[conductor] orphan_arq_age of the run')
    parser.add_argument('--set', action='append', default=[],
                        metavar='SECTION.OPTION=VALUE',
                        help='an option of every service (repeatable)')
    parser.add_argument('--json')
    parser.add_argument('--logs', help='copy the services\' logs here')
    parser.add_argument('--dir')
    parser.add_argument('--tiny', action='store_true',
                        help='2 conductors, 4 clients, phases of 4 s')
    args = parser.parse_args(argv)
    if args.tiny:
        args.conductors, args.clients = 2, 4
        args.baseline = args.hang = args.down = args.settle = 4
    result = _workdir.run_in_tempdir(run_bench, args)
    _report(result, args)
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(result, out, indent=2)
    problems = _verdict(result, args.settle)
    for problem in problems:
        print('PROBLEM: %s' % problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
