"""A real OpenStack Placement for tests: served in-process or as a process.

The application is the ``openstack-placement`` package itself; only a thin
WSGI wrapper in front of it can answer 5xx or drop requests, to simulate
an unhealthy Placement.
"""

import argparse
import json
import signal
import threading

from oslo_utils import uuidutils

from cyborg import embedded_placement
from cyborg import exception
from cyborg import service
from cyborg.agent import placement as agent_placement


class FaultInjector:
    """WSGI middleware: passes requests through unless told to fail them."""

    def __init__(self, app):
        self.app = app
        self.status = None
        self.requests = 0
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self._lock:
            self.requests += 1
        if self.status is not None:
            body = json.dumps({'errors': [{'status': self.status,
                                           'title': 'injected'}]}).encode()
            start_response('%d Injected' % self.status,
                           [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(body)))])
            return [body]
        return self.app(environ, start_response)


class PlacementServer:
    """Placement on a free port of 127.0.0.1, with helpers to inspect it."""

    def __init__(self, connection, port=0, reuse_port=False):
        self.faults = FaultInjector(
            embedded_placement.placement_app(connection))
        self.service = service.WSGIService('placement', self.faults,
                                           '127.0.0.1', port, 8,
                                           reuse_port=reuse_port)

    def start(self):
        self.service.start()
        return self

    def stop(self):
        self.service.stop()
        self.service.wait()

    @property
    def url(self):
        return self.service.url

    def client(self):
        return embedded_placement.client_for(self.url)

    # --- Helpers for assertions ---------------------------------------------

    def compute_node(self, name):
        return embedded_placement.ensure_compute_node(self.client(), name)

    def subtree(self, name):
        """name -> {uuid, inventories, traits} of a compute node's children.
        """
        client = self.client()
        root = client.provider_by_name(name)
        if root is None:
            return {}
        found = children(client, root['uuid'])
        for provider in found.values():
            assert provider.pop('parent') == root['uuid'], provider
        return found

    def allocate(self, provider_uuid, resource_class, amount,
                 consumer=None):
        """Allocate from a provider as Nova would for an instance."""
        consumer = consumer or uuidutils.generate_uuid()
        client = self.client()
        client._request('PUT', '/allocations/%s' % consumer, {
            'allocations': {provider_uuid: {
                'resources': {resource_class: amount}}},
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid()}, ok=(204,))
        return consumer

    def free(self, consumer):
        self.client()._request('DELETE', '/allocations/%s' % consumer,
                               ok=(204, 404))

    def wipe(self):
        """Remove every allocation and provider, leaves first."""
        client = self.client()
        providers = client._request(
            'GET', '/resource_providers').json()['resource_providers']
        for provider in providers:
            allocations = client._request(
                'GET', '/resource_providers/%s/allocations'
                % provider['uuid']).json()['allocations']
            for consumer in allocations:
                self.free(consumer)
        by_uuid = {p['uuid']: p for p in providers}

        def depth(provider):
            level = 0
            while provider.get('parent_provider_uuid') in by_uuid:
                provider = by_uuid[provider['parent_provider_uuid']]
                level += 1
            return level

        for provider in sorted(providers, key=depth, reverse=True):
            client.delete_provider(provider['uuid'])


def children(client, root_uuid):
    """name -> {uuid, parent, inventories, traits} below a root provider.

    Inventories keep only total, reserved and max_unit: the fields the
    agent decides.
    """
    result = {}
    for provider in client.providers_in_tree(root_uuid):
        if provider['uuid'] == root_uuid:
            continue
        _gen, invs = client.get_inventories(provider['uuid'])
        _gen, traits = client.get_traits(provider['uuid'])
        result[provider['name']] = {
            'uuid': provider['uuid'],
            'parent': provider['parent_provider_uuid'],
            'traits': frozenset(traits),
            'inventories': {rc: {k: inv[k] for k in ('total', 'reserved',
                                                     'max_unit')}
                            for rc, inv in invs.items()}}
    return result


def provider_tree(server, host, state_dir):
    """An agent-side ProviderTree bound to ``server`` for ``host``."""
    return agent_placement.ProviderTree(
        host, str(state_dir / ('agent-%s-placement.json' % host)),
        client=server.client())


def main(argv=None):
    """Serve Placement as a process: ``python -m cyborg.tests.placement``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('--connection', required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--compute-node', action='append', default=[])
    parser.add_argument('--reuse-port', action='store_true',
                        help='share the port with other Placement processes '
                             'on the same database, as a WSGI server\'s '
                             'worker processes do')
    args = parser.parse_args(argv)
    try:
        server = PlacementServer(args.connection, args.port,
                                 args.reuse_port).start()
    except exception.ConfigError as exc:
        service.fail(exc)
    for name in args.compute_node:
        server.compute_node(name)
    print('Placement listening on %s' % server.url, flush=True)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    while not stopping.is_set():
        stopping.wait(0.5)
    server.stop()


if __name__ == '__main__':
    main()
