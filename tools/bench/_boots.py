"""Nova's boot sequences and the agents' periodic reports of the chaos bench.

Each boot thread plays nova-conductor and nova-compute for one instance at
a time, again and again: create ARQs from the profile, PATCH the binding
to a host and one of its deployables' providers, wait until the ARQs are
resolved (polling, as Nova does when its event wait ends) and Nova got the
``accelerator-request-bound`` event of each, hold the instance a moment,
then delete its ARQs (which unbinds them). A call that fails is counted
by its HTTP status and sent again, as an operator or Nova would retry;
the bench only judges what Cyborg finally holds.
"""

import collections
import random
import threading
import time
import uuid

import requests

PROFILE = 'bench'
PROJECT = 'chaos-project'
RETRY_S = 1.0
POLL_S = 0.5


class Boot:
    """One instance's sequence, with the times the fault windows need."""

    def __init__(self):
        self.instance = str(uuid.uuid4())
        self.arqs = []
        self.patched = None
        self.resolved = None
        self.lost = None
        self.states = None


class Boots:
    """``count`` threads booting and deleting instances until stop()."""

    def __init__(self, api_url, nova, count, resolve_timeout):
        self.api = api_url + '/v2/accelerator_requests'
        self.nova = nova
        self.count = count
        self.resolve_timeout = resolve_timeout
        self.targets = []
        self.lock = threading.Lock()
        self.failed = []
        self.boots = []
        self.orphans = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True)
                         for _ in range(count)]

    def start(self, targets):
        self.targets = targets
        for thread in self._threads:
            thread.start()
            # NOTE(bench): spread the first creates, as arrivals would be.
            time.sleep(0.01)

    def stop(self, timeout):
        """Let every thread finish (delete) its instance; returns the
        threads still running after ``timeout``."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return sum(thread.is_alive() for thread in self._threads)

    def failures(self, start, end):
        """HTTP status (or exception) -> failed calls in [start, end]."""
        with self.lock:
            return collections.Counter(what for at, what in self.failed
                                       if start <= at <= end)

    def window(self, start, end):
        """Boots whose bind was sent before ``end`` and not resolved
        before ``start``."""
        with self.lock:
            return [b for b in self.boots
                    if b.patched is not None and b.patched < end and
                    (b.resolved is None or b.resolved >= start)]

    def _call(self, http, method, expect, **kwargs):
        """Send until the answer is ``expect`` (a set); None once stopped
        for good (the deadline passed)."""
        deadline = kwargs.pop('deadline', None)
        while True:
            try:
                resp = http.request(method, self.api, timeout=60, **kwargs)
            except requests.RequestException as exc:
                what = type(exc).__name__
            else:
                if resp.status_code in expect:
                    return resp
                what = 'HTTP %d' % resp.status_code
            with self.lock:
                self.failed.append((time.monotonic(), what))
            if deadline is not None and time.monotonic() > deadline:
                return None
            time.sleep(RETRY_S)

    def _run(self):
        with requests.Session() as http:
            while not self._stop.is_set():
                self._boot(http, Boot())

    def _boot(self, http, boot):
        self.nova.own(boot.instance, PROJECT)
        with self.nova._lock:
            self.nova.on_host.add(boot.instance)
        created = self._call(http, 'POST', {201},
                             json={'device_profile_name': PROFILE})
        boot.arqs = sorted(a['uuid'] for a in created.json()['arqs'])
        host, rp = random.choice(self.targets)
        patch = {arq: [
            {'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
            {'op': 'add', 'path': '/instance_uuid', 'value': boot.instance},
        ] for arq in boot.arqs}
        boot.patched = time.monotonic()
        with self.lock:
            self.boots.append(boot)
        # NOTE(bench): a bind retried after a 503 is idempotent (202);
        # anything else but 202 is counted and sent again.
        self._call(http, 'PATCH', {202}, json=patch)
        deadline = boot.patched + self.resolve_timeout
        while True:
            resp = self._call(http, 'GET', {200, 423}, deadline=deadline,
                              params={'instance': boot.instance,
                                      'bind_state': 'resolved'})
            if resp is not None and resp.status_code == 200 and \
                    self._told(boot):
                boot.states = collections.Counter(
                    a['state'] for a in resp.json()['arqs'])
                boot.resolved = time.monotonic()
                break
            if time.monotonic() > deadline:
                boot.lost = ('not resolved' if resp is None or
                             resp.status_code != 200 else
                             'Nova never told')
                break
            time.sleep(POLL_S)
        time.sleep(random.uniform(0.5, 2.0))
        # NOTE(bench): an ARQ stuck in BindStarted may refuse its delete
        # for good; the thread goes on with another instance.
        deleted = self._call(http, 'DELETE', {204},
                             params={'instance': boot.instance},
                             deadline=time.monotonic() + self.resolve_timeout)
        if deleted is None:
            boot.lost = boot.lost or 'delete refused'

    def _told(self, boot):
        tags = {event['tag'] for _headers, events in
                self.nova.events_of(boot.instance) for event in events}
        return tags >= set(boot.arqs)


class Reporting:
    """Each agent calls report() every ``interval`` seconds, as its
    periodic task would; a report that raises is counted and retried."""

    def __init__(self, agents, interval):
        self.agents = agents
        self.interval = interval
        self.errors = collections.Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(a,),
                                          daemon=True) for a in agents]

    def start(self):
        for thread in self._threads:
            thread.start()

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(120)

    def _run(self, agent):
        # NOTE(bench): agents out of step, as real hosts are.
        self._stop.wait(random.uniform(0, self.interval))
        while not self._stop.is_set():
            try:
                delay = agent.manager.report()
            except Exception as exc:  # noqa: BLE001 - counted, retried
                with self._lock:
                    self.errors[type(exc).__name__] += 1
                delay = None
            self._stop.wait(self.interval if delay is None else delay)
