"""Benchmark: the v2 API of cyborg-all-in-one, listed and bound as by Nova."""

import argparse
import collections
import json
import math
import os
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
RESOLVE_TIMEOUT = 60
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
            if predicate():
                return
        except (requests.ConnectionError, requests.Timeout, ValueError):
            pass
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
            'fake_driver': {'device_count': self.devices,
                            'accelerators_per_device': self.per_device},
        })
        start = time.monotonic()
        self.proc = processes.Process('cyborg-all-in-one', conf, workdir)
        _wait(self._devices_listed, 'the %d devices in GET /v2/devices'
              % self.devices, self.proc)
        listed = time.monotonic() - start
        # NOTE(bench): the agent then writes one provider per deployable
        # to the embedded Placement, in the same process; measuring while
        # it does would measure that too.
        _wait(self._placement_synced, 'the Placement sync', self.proc)
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
                self.log = self.proc.log()
        finally:
            self._tmp.cleanup()

    def errors(self):
        """The server's tracebacks and errors, with their count."""
        return server_errors(self.proc.log() if self.proc.alive()
                             else self.log)

    def _devices_listed(self):
        resp = requests.get(self.url + '/v2/devices', timeout=30)
        return resp.status_code == 200 and \
            len(resp.json()['devices']) == self.devices

    def _placement_synced(self):
        path = os.path.join(self.state, PROVIDERS_FILE)
        if not os.path.exists(path):
            return False
        with open(path) as state:
            return len(json.load(state).get('providers') or {}) == \
                self.devices


def server_errors(log):
    """Distinct last lines of tracebacks and ERROR lines, with counts."""
    found = collections.Counter()
    lines = log.splitlines()
    for index, line in enumerate(lines):
        if ' ERROR ' in line and 'Traceback' not in line:
            found[line.split(' ERROR ', 1)[1][:300]] += 1
        elif line.startswith('Traceback'):
            tail = index + 1
            while tail < len(lines) and (lines[tail].startswith(' ') or
                                         not lines[tail].strip()):
                tail += 1
            if tail < len(lines):
                found[lines[tail][:300]] += 1
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
    print('%-28s %9s %9s %9s' % ('', 'req/s', 'p50 (ms)', 'p95 (ms)'))
    for label, threads in (('sequential', 1),
                           ('%d concurrent clients' % clients, clients)):
        wall, ms = _get_many(url + '/v2/deployables', requests_total,
                             threads)
        print('%-28s %9.1f %9.1f %9.1f' % (
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
    """Nova's calls for one instance: profile, create, bind, wait."""

    def __init__(self, http, url, rp_uuid):
        self.http = http
        self.url = url
        self.rp_uuid = rp_uuid
        self.instance = str(uuid.uuid4())
        self.arqs = []
        self.polls = 0
        self.resolve_ms = None

    def until_resolved(self):
        api = self.url + '/v2/accelerator_requests'
        profiles = check(self.http.get(self.url + '/v2/device_profiles',
                                       params={'name': PROFILE}),
                         200, 'GET /v2/device_profiles?name=')
        if len(profiles.json()['device_profiles']) != 1:
            raise Failed('GET /v2/device_profiles?name=%s: %s' % (
                PROFILE, profiles.text[:500]))
        start = time.perf_counter()
        created = check(self.http.post(api, json={
            'device_profile_name': PROFILE}), 201,
            'POST /v2/accelerator_requests').json()['arqs']
        patch = {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': HOST},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': self.rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': self.instance},
        ] for arq in created}
        check(self.http.patch(api, json=patch), 202,
              'PATCH /v2/accelerator_requests')
        deadline = time.monotonic() + RESOLVE_TIMEOUT
        while True:
            self.polls += 1
            resp = self.http.get(api, params={'instance': self.instance,
                                              'bind_state': 'resolved'})
            if resp.status_code == 200:
                break
            if resp.status_code != 423 or time.monotonic() > deadline:
                check(resp, 200, 'GET /v2/accelerator_requests?instance='
                      '&bind_state=resolved')
            time.sleep(POLL_INTERVAL)
        self.resolve_ms = (time.perf_counter() - start) * 1000
        self.arqs = resp.json()['arqs']
        if sorted(a['uuid'] for a in self.arqs) != \
                sorted(a['uuid'] for a in created):
            raise Failed('instance %s resolved with ARQs %s, created %s' % (
                self.instance, [a['uuid'] for a in self.arqs],
                [a['uuid'] for a in created]))

    def delete(self):
        check(self.http.delete(self.url + '/v2/accelerator_requests',
                               params={'instance': self.instance}),
              204, 'DELETE /v2/accelerator_requests?instance=')

    def unbound(self):
        return [arq for arq in self.arqs if arq['state'] != 'Bound']


def boot_sequential(url, times):
    total_ms, resolve_ms, polls = [], [], 0
    with requests.Session() as http:
        create_profile(http, url)
        rp_uuid = first_rp_uuid(http, url)
        for _ in range(times):
            boot = Boot(http, url, rp_uuid)
            start = time.perf_counter()
            boot.until_resolved()
            boot.delete()
            total_ms.append((time.perf_counter() - start) * 1000)
            resolve_ms.append(boot.resolve_ms)
            polls += boot.polls
            if boot.unbound():
                raise Failed('ARQs not Bound: %s' % boot.unbound())
    print()
    print('2. Nova\'s boot sequence, one instance at a time, %d times '
          '(GET profile, POST, PATCH, poll resolved every %d ms, DELETE):'
          % (times, POLL_INTERVAL * 1000))
    print('   whole sequence:       %s (mean %.1f ms)' % (
        summary(total_ms), statistics.mean(total_ms)))
    print('   create -> resolved:   %s (mean %.1f ms, %.1f polls per '
          'instance)' % (summary(resolve_ms), statistics.mean(resolve_ms),
                         polls / times))


def boot_concurrent(url, instances):
    with requests.Session() as http:
        create_profile(http, url)
        rp_uuid = first_rp_uuid(http, url)
    barrier = threading.Barrier(instances + 1)
    boots, ms, errors = [], [], []
    lock = threading.Lock()

    def instance():
        with requests.Session() as http:
            boot = Boot(http, url, rp_uuid)
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
    if errors:
        print('   %d of %d instances failed:' % (len(errors), instances))
        kinds = collections.Counter(str(exc)[:200] for exc in errors)
        for kind, count in kinds.most_common():
            print('   %4d x %s' % (count, kind))
        return False
    arqs = [arq for boot in boots for arq in boot.arqs]
    unbound = [arq for arq in arqs if arq['state'] != 'Bound']
    handles = [arq['attach_handle_uuid'] for arq in arqs
               if arq['state'] == 'Bound']
    unique = len(set(handles)) == len(handles) and None not in handles
    print('   wall time %.2f s; per instance %s (mean %.1f ms, %.1f polls)'
          % (wall, summary(ms), statistics.mean(ms),
             sum(boot.polls for boot in boots) / len(boots)))
    print('   ARQs Bound: %d of %d' % (len(arqs) - len(unbound), len(arqs)))
    print('   no handle given twice: %s (%d handles, %d distinct)' % (
        'yes' if unique else 'no', len(handles), len(set(handles))))
    return unique and not unbound


def report_errors(aio):
    errors = aio.errors()
    if errors:
        print('   The server logged %d errors:' % sum(errors.values()))
        for line, count in errors.most_common(5):
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
    parser.add_argument('--workers', type=int, default=8,
                        help='[api] workers')
    args = parser.parse_args()
    if not 1 <= args.deployables <= 4096:
        parser.error('--deployables must be between 1 and 4096')
    if not 1 <= args.instances <= 1024:
        parser.error('--instances must be between 1 and 1024')
    for name in ('requests', 'clients', 'boots', 'workers'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)

    ok = True
    try:
        with AllInOne(args.deployables, 2, args.workers) as aio:
            try:
                list_deployables(aio.url, args.requests, args.clients,
                                 args.deployables)
                boot_sequential(aio.url, args.boots)
            finally:
                report_errors(aio)
        print()
        with AllInOne(1, max(64, args.instances), args.workers) as aio:
            try:
                ok = boot_concurrent(aio.url, args.instances)
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
