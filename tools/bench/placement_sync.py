"""Benchmark: Placement requests of the agent's provider tree, per step.

Serves the real openstack-placement application in this process, creates
a compute node provider, lets the fake driver report 64 cards of one
deployable each (``--deployables``) and prints, for each step of an
agent's life, the Placement requests its ``ProviderTree`` sent (counted by
the client, and broken down by kind) and the wall time:

* the first sync, where every provider is new;
* a sync of the unchanged host, which is what every report costs;
* a heal that finds no drift, which is what every heal interval costs;
* a heal after one provider was deleted by hand;
* every device turning ``ready``, which un-reserves every inventory.

The issue's targets (at most 3 requests per new provider, none for an
unchanged host) are checked and printed; times are only reported.

Usage: python tools/bench/placement_sync.py [--deployables N]
[--connection URL] (SQLite in a temporary directory by default; a MariaDB
or PostgreSQL URL must point at an empty database).
"""

import argparse
import collections
import os
import re
import shlex
import sys
import tempfile
import time

from oslo_config import cfg

import cyborg  # noqa: F401 (selects the threading backend)
from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import states
from cyborg.agent import cache as report_cache
from cyborg.agent import placement as agent_placement
from cyborg.clients import placement as placement_client
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.tests import placement as placement_helpers

CONF = cfg.CONF
HOST = 'bench-host'
TARGET_PER_PROVIDER = 3
_UUID = re.compile(r'/[0-9a-f]{8}-[0-9a-f-]{27}')
_NAME = re.compile(r'/(traits|resource_classes)/[A-Z0-9_]+')
_PASSWORD = re.compile(r'(://[^:/@\s]+:)[^@\s]*@')


class RecordingAdapter:
    """Passes requests to a keystoneauth1 adapter, noting each one's kind.
    """

    def __init__(self, adapter):
        self.adapter = adapter
        self.kinds = collections.Counter()

    def request(self, url, method, **kwargs):
        path, _sep, query = url.partition('?')
        path = _NAME.sub(r'/\1/{name}', _UUID.sub('/{uuid}', path))
        if query:
            path += '?' + query.partition('=')[0]
        self.kinds[method + ' ' + path] += 1
        return self.adapter.request(url, method, **kwargs)


def per_provider(kind):
    """Whether a request kind is about one child provider."""
    return kind.startswith('POST /resource_providers') or \
        '/resource_providers/{uuid}' in kind


def build_devices(count):
    """Device key -> primitive, as the agent's report cache holds them."""
    CONF.set_override('device_count', count, group='fake_driver')
    found = fake.FakeDriver().discover(base.DiscoveryContext(HOST))
    primitives = report.HostReport(host=HOST,
                                   devices=found).to_primitive()['devices']
    return {report_cache.device_key(dev): dev for dev in primitives}


class Step:
    """What one call to the provider tree cost."""

    def __init__(self, label, tree, recorder, func):
        self.label = label
        recorder.kinds.clear()
        before = tree.client.calls
        start = time.perf_counter()
        failed = func()
        self.ms = (time.perf_counter() - start) * 1000
        if failed:
            sys.exit('%s: %d providers could not be written' % (label,
                                                                failed))
        self.calls = tree.client.calls - before
        self.kinds = dict(recorder.kinds)
        self.provider_calls = sum(n for kind, n in self.kinds.items()
                                  if per_provider(kind))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--deployables', type=int, default=64)
    parser.add_argument('--connection',
                        help='SQLAlchemy URL of an empty database for '
                             'Placement')
    args = parser.parse_args()
    if not 1 <= args.deployables <= 4096:
        parser.error('--deployables must be between 1 and 4096')

    CONF([], project='cyborg', default_config_files=[])
    with tempfile.TemporaryDirectory(prefix='cyborg-bench-') as workdir:
        CONF.set_override('state_path', workdir)
        connection = args.connection or \
            'sqlite:///%s/placement.sqlite' % workdir
        server = placement_helpers.PlacementServer(connection).start()
        try:
            met = run(server, workdir, args.deployables)
        finally:
            server.stop()
    # NOTE(bench): the figures get pasted into docs; a database password
    # must not travel with them.
    command = _PASSWORD.sub(r'\1***@', shlex.join(['python'] + sys.argv))
    print('Command: %s' % command)
    return 0 if met else 1


def run(server, workdir, count):
    server.compute_node(HOST)
    devices = build_devices(count)
    recorder = RecordingAdapter(server.client().adapter)
    tree = agent_placement.ProviderTree(
        HOST, os.path.join(workdir, 'agent-%s-placement.json' % HOST),
        client=placement_client.PlacementClient(recorder))
    print('Placement (openstack-placement, in process) at %s; %d devices '
          'of one deployable each under compute node %s' % (
              server.url, len(devices), HOST))

    steps = [Step('first sync (%d new providers)' % count, tree, recorder,
                  lambda: tree.sync(devices)),
             Step('sync of the unchanged host', tree, recorder,
                  lambda: tree.sync(devices)),
             Step('heal, no drift', tree, recorder,
                  lambda: tree.heal(devices))]
    gone = sorted(tree.providers)[0]
    if not server.client().delete_provider(gone):
        sys.exit('Placement kept provider %s' % gone)
    steps.append(Step('heal after 1 provider deleted by hand', tree,
                      recorder, lambda: tree.heal(devices)))
    tree.set_statuses({key: states.DEVICE_READY for key in devices})
    steps.append(Step('all %d devices turn ready' % count, tree, recorder,
                      lambda: tree.sync(devices)))
    steps.append(Step('sync of the unchanged host again', tree, recorder,
                      lambda: tree.sync(devices)))

    print()
    print('%-40s %8s %8s %10s' % ('Step', 'Requests', 'Per-RP',
                                  'Wall (ms)'))
    for step in steps:
        print('%-40s %8d %8d %10.1f' % (step.label, step.calls,
                                        step.provider_calls, step.ms))
    print('(Per-RP: the requests about one child provider; the others are '
          'made once per host.)')
    print()
    for step in steps:
        if step.kinds:
            print('%s:' % step.label)
            for kind, n in sorted(step.kinds.items()):
                print('  %4d  %s' % (n, kind))
    print()

    first, unchanged = steps[0], steps[1]
    ratio = first.provider_calls / count
    print('First sync: %d requests for %d new providers: %.2f per provider '
          '(%d once for the host: the root provider, custom traits); '
          '%.2f ms per provider' % (first.calls, count, ratio,
                                    first.calls - first.provider_calls,
                                    first.ms / count))
    per_ok = ratio <= TARGET_PER_PROVIDER
    print('Target: at most %d requests per new provider: %.2f, %s' % (
        TARGET_PER_PROVIDER, ratio, 'met' if per_ok else 'NOT met'))
    unchanged_ok = unchanged.calls == 0 and steps[-1].calls == 0
    print('Target: 0 requests for an unchanged host: %d and %d, %s' % (
        unchanged.calls, steps[-1].calls,
        'met' if unchanged_ok else 'NOT met'))

    subtree = server.subtree(HOST)
    reserved = sum(inv['reserved'] for item in subtree.values()
                   for inv in item['inventories'].values())
    total = sum(inv['total'] for item in subtree.values()
                for inv in item['inventories'].values())
    print('Placement holds %d providers under %s: %d units, %d reserved' % (
        len(subtree), HOST, total, reserved))
    return per_ok and unchanged_ok


if __name__ == '__main__':
    sys.exit(main())
