"""Benchmark: servers boot to ACTIVE through the real Nova, with an
accelerator and without.

It starts the stack the functional tests run Nova 34 on
(``cyborg.tests.nova.stack``): Keystone, Placement and Glance from PyPI;
Cyborg's API, conductor and one agent per compute host, whose fake driver
hands out MDEV handles, so that every bind asks the host's agent; Nova's
API, conductor, scheduler and two nova-compute services with the fake virt
driver; MariaDB and RabbitMQ.

It boots ``--boots`` servers whose flavor asks for a device profile and
as many with the same flavor without one, one at a time and alternating,
and deletes each (its ARQ and allocations gone) before the next. A boot
is timed from its ``POST /servers`` until Nova shows it ACTIVE (polled
every 50 ms). Cyborg's own time in a boot is the sum of the times that
cyborg-api's access log gives for the requests it served meanwhile
(Nova's ARQ create, bind and reads); the bind itself runs in the
conductor and the agent after the bind request is answered, and Nova
waits for it only if it is not done when nova-compute looks.

It prints p50 and p95 of both kinds, the difference of the medians, and
Cyborg's share of that difference (the median of Cyborg's time per boot
over it), and exits 1 when a boot failed, a server's ARQ was not Bound on
its host, or a delete left an ARQ or an allocation behind.

Usage: python tools/bench/nova_boot.py [--boots N] [--json PATH]
[--logs DIR] [--dir DIR]
"""

import argparse
import json
import os
import re
import statistics
import sys
import time

# NOTE(bench): helpers beside this script (its directory is on sys.path).
import _timing
import _workdir

from cyborg.tests import processes
from cyborg.tests.nova import stack as nova_stack

POLL_S = 0.05
_ACCESS = re.compile(r'"(\w+) (\S+)" status: (\d+) len: \S+ '
                     r'microversion: \S+ time: ([\d.]+)')


class Failed(Exception):
    """A boot went wrong; the bench exits 1."""


def _wait_active(stack, server_id):
    deadline = time.monotonic() + nova_stack.TIMEOUT
    while time.monotonic() < deadline:
        found = stack.server(server_id)
        if found['status'] == 'ERROR':
            raise Failed('server %s went ERROR: %s' % (
                server_id, found.get('fault')))
        if found['status'] == 'ACTIVE' and \
                not found.get('OS-EXT-STS:task_state'):
            return found
        time.sleep(POLL_S)
    raise Failed('server %s not ACTIVE after %d s' % (server_id,
                                                       nova_stack.TIMEOUT))


def _cyborg_requests(stack, offset):
    """[(method, path, status, seconds)] that cyborg-api logged past
    ``offset`` of its log."""
    with open(stack.cyborg_api.log_path) as log:
        log.seek(offset)
        text = log.read()
    return [(method, path, int(status), float(seconds))
            for method, path, status, seconds in _ACCESS.findall(text)]


def _check_bound(stack, server):
    arqs = stack.arqs_of(server['id'])
    wanted = [('Bound', server['OS-EXT-SRV-ATTR:host'], server['id'])]
    found = [(a['state'], a['hostname'], a['instance_uuid']) for a in arqs]
    if found != wanted:
        raise Failed('server %s: ARQs %s, not %s' % (server['id'], found,
                                                      wanted))


def _delete(stack, server_id):
    stack.delete(server_id, 'p1-member')
    processes.wait_for(
        lambda: stack.arqs_of(server_id) == [] and
        stack.allocations_of(server_id) == {}, nova_stack.TIMEOUT,
        interval=0.2, what='server %s\'s ARQs and allocations gone'
        % server_id)


def boot_once(stack, flavor, name):
    """Seconds to ACTIVE and Cyborg's requests meanwhile, for one
    server; deleted before returning."""
    offset = os.path.getsize(stack.cyborg_api.log_path)
    started = time.monotonic()
    server = stack.boot(name=name, flavor=flavor, wait=None)
    try:
        active = _wait_active(stack, server['id'])
        took = time.monotonic() - started
        requests = _cyborg_requests(stack, offset)
        if flavor == stack.flavor:
            _check_bound(stack, active)
        elif requests:
            raise Failed('a server without accelerators made Nova call '
                         'Cyborg: %s' % requests)
    finally:
        _delete(stack, server['id'])
    return took, requests


def measure(stack, boots):
    """The figures of ``boots`` boots of each kind on ``stack``."""
    times = {'accelerator': [], 'plain': []}
    cyborg = []
    calls = []
    per_call = {}
    for index in range(boots):
        for kind, flavor in (('accelerator', stack.flavor),
                             ('plain', stack.plain_flavor)):
            took, requests = boot_once(stack, flavor,
                                       'bench-%s-%d' % (kind, index))
            times[kind].append(took * 1000)
            if kind == 'accelerator':
                cyborg.append(sum(r[3] for r in requests) * 1000)
                calls.append(['%s %s' % (method, path.split('?')[0])
                              for method, path, _s, _t in requests])
                for call, (_m, _p, _s, seconds) in zip(calls[-1], requests,
                                                       strict=True):
                    per_call.setdefault(call, []).append(seconds * 1000)
    figures = {kind: {'p50_ms': statistics.median(values),
                      'p95_ms': _timing.quantile(values, 0.95),
                      'boots': len(values)}
               for kind, values in times.items()}
    difference = figures['accelerator']['p50_ms'] - \
        figures['plain']['p50_ms']
    figures['difference_ms'] = difference
    figures['cyborg_ms'] = {'p50': statistics.median(cyborg),
                            'p95': _timing.quantile(cyborg, 0.95)}
    figures['cyborg_share'] = (figures['cyborg_ms']['p50'] / difference
                               if difference > 0 else None)
    figures['cyborg_requests_per_boot'] = statistics.median(
        len(c) for c in calls)
    figures['cyborg_requests_of_first_boot'] = calls[0]
    figures['cyborg_request_p50_ms'] = {
        call: statistics.median(values) for call, values in per_call.items()}
    return figures


def report(figures):
    for kind in ('accelerator', 'plain'):
        found = figures[kind]
        print('%-12s %d boots: p50 %.0f ms, p95 %.0f ms' % (
            kind, found['boots'], found['p50_ms'], found['p95_ms']))
    share = figures['cyborg_share']
    print('difference of the medians: %.0f ms; Cyborg\'s API time per '
          'boot: p50 %.1f ms, p95 %.1f ms (%s of the difference), %d '
          'requests: %s' % (
              figures['difference_ms'], figures['cyborg_ms']['p50'],
              figures['cyborg_ms']['p95'],
              '%.0f %%' % (share * 100) if share is not None else 'n/a',
              figures['cyborg_requests_per_boot'],
              ', '.join(figures['cyborg_requests_of_first_boot'])))
    for call, median in sorted(figures['cyborg_request_p50_ms'].items()):
        print('  %-36s p50 %.1f ms' % (call, median))


def run(args, stack):
    """Measure and print on a running ``stack``; the exit status."""
    try:
        figures = measure(stack, args.boots)
    except Failed as exc:
        print('FAILED: %s' % exc)
        return 1
    report(figures)
    if args.json:
        with open(args.json, 'w') as out:
            json.dump({'args': vars(args), 'results': figures}, out,
                      indent=2)
    return 0


def _run_in(args, workdir):
    try:
        with nova_stack.NovaStack(workdir) as stack:
            return run(args, stack)
    finally:
        _workdir.copy_logs(workdir, args.logs)
        _workdir.copy_logs(os.path.join(workdir, 'nova'), args.logs)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--boots', type=int, default=20,
                        help='servers booted of each kind')
    parser.add_argument('--json', help='write the figures here')
    parser.add_argument('--logs', help='copy the services\' logs here')
    parser.add_argument('--dir', help='parent of the working directory')
    args = parser.parse_args(argv)
    if args.boots < 1:
        parser.error('--boots must be at least 1')
    return args


def main():
    return _workdir.run_in_tempdir(_run_in, parse_args())


if __name__ == '__main__':
    sys.exit(main())
