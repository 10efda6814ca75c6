"""Benchmark: the v2 API of cyborg-all-in-one, listed and bound as by Nova."""

import argparse
import collections
import json
import math
import os
import re
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid

import requests

from cyborg.tests import processes

HOST = 'bench-host'
PROFILE = 'bench'
PROVIDERS_FILE = 'agent-%s-placement.json' % HOST
START_TIMEOUT = 300
POLL_INTERVAL = 0.01


class Failed(Exception):
    """A correctness check failed; the bench exits non-zero."""


def pct(values, percent):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


def summary(ms):
    return 'p50 %.1f ms, p95 %.1f ms' % (pct(ms, 50), pct(ms, 95))


def _wait(predicate, what, proc, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise Failed('cyborg-all-in-one exited while waiting for %s:\n%s'
                         % (what, proc.log()[-4000:]))
        try:
            done = predicate()
        except (requests.ConnectionError, requests.Timeout, ValueError):
            # NOTE(bench): not listening, or not answering JSON, yet.
            done = False
        if done:
            return
        time.sleep(0.2)
    raise Failed('timed out after %ss waiting for %s' % (timeout, what))


class AllInOne:
    """cyborg-all-in-one in a temporary directory, with fake devices."""

    def __init__(self, devices, per_device, workers):
        self.devices = devices
        self.per_device = per_device
        self.workers = workers
        self.proc = None

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix='cyborg-bench-')
        workdir = self._tmp.name
        self.state = os.path.join(workdir, 'state')
        port = processes.free_port()
        self.url = 'http://127.0.0.1:%d' % port
        conf = processes.write_config(os.path.join(workdir, 'aio.conf'), {
            'DEFAULT': {'state_path': self.state, 'host': HOST},
            'api': {'port': port, 'workers': self.workers},
            'embedded_placement': {'port': processes.free_port()},
            'agent': {'report_interval': 3600},
            # NOTE(bench): binds take ready devices only; an operator
            # activates new ones, here the conductor does at discovery.
            'conductor': {'auto_activate_new_devices': True},
            'fake_driver': {'device_count': self.devices,
                            'accelerators_per_device': self.per_device},
        })
        start = time.monotonic()
        self.proc = processes.Process('cyborg-all-in-one', conf, workdir)
        try:
            _wait(self._devices_listed, 'the %d devices in GET /v2/devices'
                  % self.devices, self.proc)
            listed = time.monotonic() - start
            # NOTE(bench): the agent then writes one provider per
            # deployable to the embedded Placement, in the same process;
            # measuring while it does would measure that too.
            _wait(self._placement_synced, 'the Placement sync', self.proc)
        except BaseException:
            self.__exit__()
            raise
        print('cyborg-all-in-one (%d devices x %d accelerators, [api] '
              'workers=%d) at %s: devices listed after %.1f s, Placement '
              'synced after %.1f s' % (self.devices, self.per_device,
                                       self.workers, self.url, listed,
                                       time.monotonic() - start))
        return self

    def __exit__(self, *exc):
        try:
            if self.proc is not None:
                self.proc.stop()
        finally:
            self._tmp.cleanup()

    def errors(self):
        """The errors the server logged so far, with their counts."""
        return server_errors(self.proc.log())

    def _devices_listed(self):
        """Every device is listed, and ready (activated at discovery)."""
        resp = requests.get(self.url + '/v2/devices', timeout=30,
                            headers={'OpenStack-API-Version':
                                     'accelerator 2.4'})
        if resp.status_code != 200:
            return False
        found = resp.json()['devices']
        return len(found) == self.devices and all(
            device['status'] == 'ready' for device in found)

    def _placement_synced(self):
        path = os.path.join(self.state, PROVIDERS_FILE)
        if not os.path.exists(path):
            return False
        with open(path) as state:
            return len(json.load(state).get('providers') or {}) == \
                self.devices


_LOG_ERROR = re.compile(r'^\S+ \S+ \d+ (?:ERROR|CRITICAL) \S+ (.*)$')
_CYBORG_FRAME = re.compile(
    r'File "[^"]*/(cyborg/[^"]+)", line (\d+), in (\w+)')


def server_errors(log):
    """Counts of the server's logged errors: message and innermost frame.
    """
    found = collections.Counter()
    record = None
    for line in log.splitlines() + ['']:
        match = _LOG_ERROR.match(line)
        if match and match.group(1).startswith('[') and \
                '] ' in match.group(1):
            if record:
                found[' '.join(filter(None, record))] += 1
            record = [match.group(1).split('] ', 1)[1][:150], '']
        elif match and record:
            frame = _CYBORG_FRAME.search(match.group(1))
            if frame:
                record[1] = '(in %s:%s, %s)' % frame.groups()
        elif not match and re.match(r'^\S+ \S+ \d+ ', line) or not line:
            if record:
                found[' '.join(filter(None, record))] += 1
            record = None
    return found


def check(resp, status, what):
    if resp.status_code != status:
        raise Failed('%s: HTTP %d, expected %d: %s' % (
            what, resp.status_code, status, resp.text[:500]))
    return resp


# --- 1. GET /v2/deployables --------------------------------------------------

def list_deployables(url, requests_total, clients, expected):
    with requests.Session() as http:
        resp = check(http.get(url + '/v2/deployables'), 200,
                     'GET /v2/deployables')
    found = len(resp.json()['deployables'])
    if found != expected:
        raise Failed('GET /v2/deployables listed %d deployables, expected '
                     '%d' % (found, expected))
    print()
    print('1. GET /v2/deployables: %d deployables, response %d bytes '
          '(%.0f KiB)' % (found, len(resp.content), len(resp.content) / 1024))
    print('   %-36s %7s %9s %9s' % ('', 'req/s', 'p50 (ms)', 'p95 (ms)'))
    for label, threads in (('sequential', 1),
                           ('%d concurrent clients' % clients, clients)):
        wall, ms = _get_many(url + '/v2/deployables', requests_total,
                             threads)
        print('   %-36s %7.1f %9.1f %9.1f' % (
            '%s (%d requests)' % (label, requests_total),
            len(ms) / wall, pct(ms, 50), pct(ms, 95)))


def _get_many(url, total, threads):
    """Wall time and latencies (ms) of ``total`` GETs over the threads."""
    lock = threading.Lock()
    left = [total]
    latencies = []
    errors = []

    def client():
        with requests.Session() as http:
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                start = time.perf_counter()
                resp = http.get(url)
                elapsed = (time.perf_counter() - start) * 1000
                with lock:
                    latencies.append(elapsed)
                    if resp.status_code != 200:
                        errors.append(resp.status_code)

    workers = [threading.Thread(target=client) for _ in range(threads)]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - start
    if errors:
        raise Failed('GET %s failed %d times (HTTP %s)' % (
            url, len(errors), sorted(set(errors))))
    return wall, latencies


# --- 2 and 3. Nova's boot sequence -------------------------------------------

def create_profile(http, url):
    check(http.post(url + '/v2/device_profiles',
                    json=[{'name': PROFILE,
                           'groups': [{'resources:FPGA': '1'}]}]),
          201, 'POST /v2/device_profiles')


def first_rp_uuid(http, url):
    deployables = check(http.get(url + '/v2/deployables'), 200,
                        'GET /v2/deployables').json()['deployables']
    first = min(deployables, key=lambda dep: dep['name'])
    if not first['rp_uuid']:
        raise Failed('deployable %s has no rp_uuid' % first['name'])
    return first['rp_uuid']


class Boot:
    """Nova's calls for one instance: profile, create, bind, wait, delete.

    ``steps``: the milliseconds of each kind of call (the polls summed).
    """

    def __init__(self, http, url, rp_uuid, resolve_timeout):
        self.http = http
        self.url = url
        self.api = url + '/v2/accelerator_requests'
        self.rp_uuid = rp_uuid
        self.resolve_timeout = resolve_timeout
        self.instance = str(uuid.uuid4())
        self.arqs = []
        self.polls = 0
        self.steps = collections.Counter()
        self.resolve_ms = None

    def _call(self, step, method, url, status, **kwargs):
        start = time.perf_counter()
        resp = self.http.request(method, url, **kwargs)
        self.steps[step] += (time.perf_counter() - start) * 1000
        if status is not None:
            check(resp, status, step)
        return resp

    def until_resolved(self):
        profiles = self._call('GET device_profiles?name=', 'GET',
                              self.url + '/v2/device_profiles', 200,
                              params={'name': PROFILE})
        if len(profiles.json()['device_profiles']) != 1:
            raise Failed('GET /v2/device_profiles?name=%s: %s' % (
                PROFILE, profiles.text[:500]))
        start = time.perf_counter()
        created = self._call('POST accelerator_requests', 'POST', self.api,
                             201, json={'device_profile_name': PROFILE})
        created = sorted(arq['uuid'] for arq in created.json()['arqs'])
        patch = {arq: [
            {'op': 'add', 'path': '/hostname', 'value': HOST},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': self.rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': self.instance},
        ] for arq in created}
        self._call('PATCH accelerator_requests', 'PATCH', self.api, 202,
                   json=patch)
        deadline = time.monotonic() + self.resolve_timeout
        while True:
            self.polls += 1
            resp = self._call('GET ...&bind_state=resolved (all polls)',
                              'GET', self.api, None,
                              params={'instance': self.instance,
                                      'bind_state': 'resolved'})
            if resp.status_code == 200:
                break
            if resp.status_code != 423:
                check(resp, 200, 'GET accelerator_requests?instance=&'
                                 'bind_state=resolved')
            if time.monotonic() > deadline:
                raise Failed('ARQs still unresolved after %d s (HTTP 423 '
                             'to every poll)' % self.resolve_timeout)
            time.sleep(POLL_INTERVAL)
        self.resolve_ms = (time.perf_counter() - start) * 1000
        self.arqs = resp.json()['arqs']
        if sorted(arq['uuid'] for arq in self.arqs) != created:
            raise Failed('instance %s resolved with ARQs %s, created %s' % (
                self.instance, [arq['uuid'] for arq in self.arqs], created))

    def delete(self):
        self._call('DELETE accelerator_requests?instance=', 'DELETE',
                   self.api, 204, params={'instance': self.instance})


def boot_sequential(url, times, resolve_timeout):
    total_ms, resolve_ms, polls = [], [], 0
    steps = collections.defaultdict(list)
    with requests.Session() as http:
        create_profile(http, url)
        rp_uuid = first_rp_uuid(http, url)
        for _ in range(times):
            boot = Boot(http, url, rp_uuid, resolve_timeout)
            start = time.perf_counter()
            boot.until_resolved()
            boot.delete()
            total_ms.append((time.perf_counter() - start) * 1000)
            resolve_ms.append(boot.resolve_ms)
            polls += boot.polls
            for step, ms in boot.steps.items():
                steps[step].append(ms)
            unbound = [arq for arq in boot.arqs if arq['state'] != 'Bound']
            if unbound:
                raise Failed('ARQs resolved but not Bound: %s' % unbound)
    print()
    print('2. Nova\'s boot sequence, one instance at a time, %d times '
          '(GET profile, POST, PATCH, poll resolved every %d ms, DELETE):'
          % (times, POLL_INTERVAL * 1000))
    print('   whole sequence:     %s (mean %.1f ms)' % (
        summary(total_ms), statistics.mean(total_ms)))
    print('   create -> resolved: %s (mean %.1f ms, %.1f polls per '
          'instance)' % (summary(resolve_ms), statistics.mean(resolve_ms),
                         polls / times))
    print('   per call (p50): %s' % ', '.join(
        '%s %.1f ms' % (step, statistics.median(ms))
        for step, ms in steps.items()))


def boot_concurrent(url, instances, resolve_timeout):
    with requests.Session() as http:
        create_profile(http, url)
        rp_uuid = first_rp_uuid(http, url)
    barrier = threading.Barrier(instances + 1)
    boots, ms, errors = [], [], []
    lock = threading.Lock()

    def instance():
        with requests.Session() as http:
            boot = Boot(http, url, rp_uuid, resolve_timeout)
            barrier.wait()
            start = time.perf_counter()
            try:
                boot.until_resolved()
            except Exception as exc:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(exc)
                return
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                boots.append(boot)
                ms.append(elapsed)

    threads = [threading.Thread(target=instance) for _ in range(instances)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    print()
    print('3. %d instances at once (threads) on one provider (%s), '
          'each up to resolved:' % (instances, rp_uuid))
    print('   wall time %.2f s' % wall)
    if boots:
        print('   per instance: %s (mean %.1f ms, %.1f polls), over the %d '
              'that resolved' % (summary(ms), statistics.mean(ms),
                                 statistics.mean(b.polls for b in boots),
                                 len(boots)))
    if errors:
        print('   %d of %d instances failed:' % (len(errors), instances))
        kinds = collections.Counter(str(exc)[:160] for exc in errors)
        for kind, count in kinds.most_common():
            print('   %4d x %s' % (count, kind))
    # NOTE(bench): what the server holds in the end, failed instances
    # included, not only what each client saw.
    with requests.Session() as http:
        arqs = check(http.get(url + '/v2/accelerator_requests'), 200,
                     'GET /v2/accelerator_requests').json()['arqs']
    states = collections.Counter(arq['state'] for arq in arqs)
    handles = [arq['attach_handle_uuid'] for arq in arqs
               if arq['state'] == 'Bound']
    unique = len(set(handles)) == len(handles) and None not in handles
    print('   ARQs on the server: %d (%s); every instance\'s ARQ Bound: %s'
          % (len(arqs), ', '.join('%d %s' % (n, state) for state, n in
                                  sorted(states.items())),
             'yes' if states['Bound'] == len(arqs) == instances else 'no'))
    print('   no handle given twice: %s (%d Bound ARQs, %d distinct '
          'handles)' % ('yes' if unique else 'no', len(handles),
                        len(set(handles))))
    return unique and not errors and states['Bound'] == len(arqs) == \
        instances


def report_errors(aio):
    errors = aio.errors()
    if errors:
        print('   The server logged %d errors:' % sum(errors.values()))
        for line, count in errors.most_common(6):
            print('   %4d x %s' % (count, line))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--deployables', type=int, default=1000,
                        help='fake devices of one deployable each for 1 '
                             'and 2')
    parser.add_argument('--requests', type=int, default=50,
                        help='GET /v2/deployables requests per run')
    parser.add_argument('--clients', type=int, default=8,
                        help='concurrent clients of the second run')
    parser.add_argument('--boots', type=int, default=20,
                        help='sequential boot sequences')
    parser.add_argument('--instances', type=int, default=50,
                        help='instances booted at once on one provider')
    parser.add_argument('--resolve-timeout', type=int, default=20,
                        help='seconds an instance polls for resolved ARQs')
    parser.add_argument('--workers', type=int, default=8,
                        help='[api] workers')
    args = parser.parse_args()
    if not 1 <= args.deployables <= 4096:
        parser.error('--deployables must be between 1 and 4096')
    if not 1 <= args.instances <= 1024:
        parser.error('--instances must be between 1 and 1024')
    for name in ('requests', 'clients', 'boots', 'workers',
                 'resolve_timeout'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name.replace('_', '-'))

    ok = True
    try:
        with AllInOne(args.deployables, 2, args.workers) as aio:
            try:
                list_deployables(aio.url, args.requests, args.clients,
                                 args.deployables)
                boot_sequential(aio.url, args.boots, args.resolve_timeout)
            finally:
                report_errors(aio)
        print()
        with AllInOne(1, max(64, args.instances), args.workers) as aio:
            try:
                ok = boot_concurrent(aio.url, args.instances,
                                     args.resolve_timeout)
            finally:
                report_errors(aio)
    except Failed as exc:
        print('FAILED: %s' % exc)
        ok = False
    print()
    print('Command: %s' % shlex.join(['python'] + sys.argv))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
