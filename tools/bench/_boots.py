"""Nova's boot sequences for the chaos bench, claiming in Placement first.

Each boot thread plays nova-scheduler, nova-conductor and nova-compute for
one instance at a time, again and again, as Nova does:

1. ask Placement for allocation candidates and claim one (``PUT
   /allocations/{instance}``), so that only a deployable with room is
   ever picked; none means NoValidHost, and the boot waits and asks
   again;
2. create the instance's ARQs from the profile;
3. PATCH the binding to that deployable's host and provider;
4. wait until Nova got the ``accelerator-request-bound`` event of each
   ARQ, then read them (resolved) once, as nova-compute does;
5. hold the instance a moment, then delete its ARQs (which unbinds them)
   and its allocation.

A call that fails is recorded by its HTTP status and sent again, as Nova
or an operator would; every request is recorded as (start, end, kind,
status) for the bench's per-fault figures.
"""

import collections
import contextlib
import random
import threading
import time
import uuid

import requests

PROFILE = 'bench'
PROJECT = 'chaos-project'
RESOURCE_CLASS = 'FPGA'
TRAIT = 'CUSTOM_FAKE_DEVICE'
RETRY_S = 1.0
POLL_S = 0.5
#: How often a boot looks at the events Nova got (in this process).
EVENT_POLL_S = 0.1
CLIENT_TIMEOUT = 60
PLACEMENT_HEADERS = {'OpenStack-API-Version': 'placement 1.36'}


class Boot:
    """One instance's sequence, with the times the fault windows need."""

    def __init__(self):
        self.instance = str(uuid.uuid4())
        self.arqs = []
        self.host = None
        self.rp = None
        self.patched = None
        self.resolved = None
        self.lost = None
        self.states = None
        #: Placement took the claim although the device was full: its
        #: usage exceeded its capacity right after, or when the bind
        #: failed (see _overallocated).
        self.overallocated = False


class Boots:
    """``count`` threads booting and deleting instances until stop().

    :param hosts_of: {provider uuid: host} of the deployables; updated by
        the bench when agents report new ones.
    """

    def __init__(self, api_url, placement_url, placement_token, nova, count,
                 resolve_timeout):
        self.api = api_url + '/v2/accelerator_requests'
        self.placement = placement_url
        self.placement_headers = dict(PLACEMENT_HEADERS,
                                      **{'X-Auth-Token': placement_token})
        self.nova = nova
        self.count = count
        self.resolve_timeout = resolve_timeout
        self.hosts_of = {}
        self.lock = threading.Lock()
        self.records = []
        self.boots = []
        self.no_valid_host = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True)
                         for _ in range(count)]

    def start(self, hosts_of):
        self.hosts_of = dict(hosts_of)
        for thread in self._threads:
            thread.start()
            # NOTE(bench): spread the first creates, as arrivals would be.
            time.sleep(0.02)

    def burst(self, count):
        """``count`` boots more at once, as one multi-create (``max_count``)
        asks Nova for; each of these threads boots one instance."""
        for _ in range(count):
            thread = threading.Thread(target=self._run, args=(1,),
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout):
        """Let every thread finish (delete) its instance; returns the
        threads still running after ``timeout``."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return sum(thread.is_alive() for thread in self._threads)

    def between(self, start, end):
        """Records of the requests sent in [start, end)."""
        with self.lock:
            return [r for r in self.records if start <= r[0] < end]

    def window(self, start, end):
        """Boots whose bind was sent before ``end`` and not resolved
        before ``start``."""
        with self.lock:
            return [b for b in self.boots
                    if b.patched is not None and b.patched < end and
                    (b.resolved is None or b.resolved >= start)]

    def known_arqs(self):
        with self.lock:
            return {arq for boot in self.boots for arq in boot.arqs}

    def _record(self, start, kind, status):
        with self.lock:
            self.records.append((start, time.monotonic(), kind, status))

    def _call(self, http, kind, method, expect, url=None, deadline=None,
              **kwargs):
        """Send until the answer is in ``expect``; None once ``deadline``
        passed."""
        while True:
            start = time.monotonic()
            try:
                resp = http.request(method, url or self.api,
                                    timeout=CLIENT_TIMEOUT, **kwargs)
                status = resp.status_code
            except requests.Timeout:
                resp, status = None, 'timeout'
            except requests.RequestException:
                resp, status = None, 'refused'
            self._record(start, kind, status)
            if resp is not None and status in expect:
                return resp
            if self._stop.is_set() and kind == 'create' or (
                    deadline is not None and time.monotonic() > deadline):
                return None
            time.sleep(RETRY_S)

    def _run(self, instances=None):
        with requests.Session() as http, requests.Session() as placement:
            placement.headers.update(self.placement_headers)
            while not self._stop.is_set() and instances != 0:
                self._boot(http, placement, Boot())
                if instances:
                    instances -= 1

    def _claim(self, placement, boot):
        """Claim one deployable with room in Placement, as the scheduler
        does; False when there is none (NoValidHost) or it was lost."""
        try:
            resp = placement.get(
                self.placement + '/allocation_candidates',
                params={'resources': '%s:1' % RESOURCE_CLASS,
                        'required': TRAIT, 'limit': 20},
                timeout=CLIENT_TIMEOUT)
            known = dict(self.hosts_of)
            found = [rp for candidate in resp.json()['allocation_requests']
                     for rp in candidate['allocations'] if rp in known] \
                if resp.status_code == 200 else []
            if not found:
                return False
            boot.rp = random.choice(found)
            boot.host = known[boot.rp]
            resp = placement.put(
                self.placement + '/allocations/' + boot.instance, json={
                    'allocations': {boot.rp: {'resources': {
                        RESOURCE_CLASS: 1}}},
                    'project_id': PROJECT, 'user_id': 'chaos-user',
                    'consumer_generation': None}, timeout=CLIENT_TIMEOUT)
        except (requests.RequestException, ValueError, KeyError):
            return False
        if resp.status_code != 204:
            return False
        boot.overallocated = self._overallocated(placement, boot.rp)
        return True

    def _overallocated(self, placement, rp):
        """Whether the provider's usage exceeds its capacity.

        Placement 16.0.0 lets concurrent claims of new consumers past a
        full provider (it logs "... reduces existing overage from N to
        N" and accepts them); a bind of such a claim rightly fails, and
        is not Cyborg's to answer for.
        """
        try:
            base = self.placement + '/resource_providers/' + rp
            inventory = placement.get(base + '/inventories/' +
                                      RESOURCE_CLASS,
                                      timeout=CLIENT_TIMEOUT).json()
            used = placement.get(base + '/usages', timeout=CLIENT_TIMEOUT
                                 ).json()['usages'].get(RESOURCE_CLASS, 0)
            capacity = (inventory['total'] - inventory['reserved']) * \
                inventory['allocation_ratio']
        except (requests.RequestException, ValueError, KeyError):
            return False
        return used > capacity

    def _unclaim(self, placement, boot):
        # NOTE(bench): a claim left behind would hide a device's room from
        # every later boot; Placement is sent the delete until it answers.
        while True:
            with contextlib.suppress(requests.RequestException):
                resp = placement.delete(
                    self.placement + '/allocations/' + boot.instance,
                    timeout=CLIENT_TIMEOUT)
                if resp.status_code in (204, 404):
                    return
            time.sleep(RETRY_S)

    def _boot(self, http, placement, boot):
        self.nova.own(boot.instance, PROJECT)
        with self.nova._lock:
            self.nova.on_host.add(boot.instance)
        # NOTE(bench): the scheduler claims before nova-conductor creates
        # the ARQs, which are bound moments later.
        while not self._claim(placement, boot):
            if self._stop.is_set():
                return
            with self.lock:
                self.no_valid_host += 1
            time.sleep(RETRY_S)
        created = self._call(http, 'create', 'POST', {201},
                             json={'device_profile_name': PROFILE})
        if created is None:
            self._unclaim(placement, boot)
            return
        boot.arqs = sorted(a['uuid'] for a in created.json()['arqs'])
        with self.lock:
            self.boots.append(boot)
        patch = {arq: [
            {'op': 'add', 'path': '/hostname', 'value': boot.host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': boot.rp},
            {'op': 'add', 'path': '/instance_uuid', 'value': boot.instance},
        ] for arq in boot.arqs}
        boot.patched = time.monotonic()
        # NOTE(bench): a bind sent again after a 503 is idempotent (202).
        bound = self._call(http, 'bind', 'PATCH', {202, 404}, json=patch)
        if bound is not None and bound.status_code == 404:
            # NOTE(bench): Nova would fail the build; its ARQs went (as
            # orphans) while it was still binding them.
            boot.lost = 'ARQs gone before their bind'
            self._unclaim(placement, boot)
            return
        self._wait_resolved(http, boot)
        if (boot.states or {}).get('BindFailed') and not boot.overallocated:
            # NOTE(bench): of two claims Placement let past a full device,
            # the one read right after may be the one that binds; the other
            # fails its bind, and the overage is still there to read now.
            boot.overallocated = self._overallocated(placement, boot.rp)
        time.sleep(random.uniform(0.5, 2.0))
        # NOTE(bench): an ARQ stuck in BindStarted may refuse its delete
        # for good; the thread goes on with another instance.
        deleted = self._call(http, 'delete', 'DELETE', {204},
                             params={'instance': boot.instance},
                             deadline=time.monotonic() + self.resolve_timeout)
        if deleted is None:
            boot.lost = boot.lost or 'delete refused'
        self._unclaim(placement, boot)

    def _wait_resolved(self, http, boot):
        """Wait for the events, then read the resolved ARQs once, as
        nova-compute does; lost when the events never come."""
        deadline = boot.patched + self.resolve_timeout
        while not self._told(boot) and time.monotonic() < deadline:
            time.sleep(EVENT_POLL_S)
        while True:
            resp = self._call(http, 'read', 'GET', {200, 423},
                              deadline=deadline,
                              params={'instance': boot.instance,
                                      'bind_state': 'resolved'})
            told = self._told(boot)
            if resp is not None and resp.status_code == 200 and told:
                arqs = resp.json()['arqs']
                boot.states = collections.Counter(a['state'] for a in arqs)
                boot.resolved = time.monotonic()
                return
            if time.monotonic() > deadline:
                boot.lost = ('Nova never told' if not told else
                             'not resolved')
                return
            time.sleep(POLL_S)

    def _told(self, boot):
        tags = {event['tag'] for _headers, events in
                self.nova.events_of(boot.instance) for event in events}
        return tags >= set(boot.arqs)

    def duplicate_events(self, boots):
        """Events Nova got more than once, over ``boots``: (instance, tag,
        status) seen twice or more count once each extra time."""
        extra = 0
        for boot in boots:
            seen = collections.Counter(
                (event['tag'], event.get('status'))
                for _headers, events in self.nova.events_of(boot.instance)
                for event in events)
            extra += sum(n - 1 for n in seen.values() if n > 1)
        return extra
