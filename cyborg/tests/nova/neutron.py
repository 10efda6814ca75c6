"""The one stand-in of the Nova tests: Neutron answering that nothing exists.

Nova calls Neutron even for servers booted with ``networks: none``: it
lists the extensions, the instance's ports when it builds, refreshes and
deletes one, and the networks and floating IPs when it shows the server's
addresses. Neutron cannot run here (it needs its agents and the kernel's
networking), so this answers those reads as a Neutron without a single
port, network or extension would, and refuses every write with Neutron's
own error body. Every request is recorded, so that a test can show Nova
never asked for more.
"""

import http.server
import json
import re
import threading

_COLLECTION = re.compile(r'^/v2\.0/([a-z0-9_-]+)(?:\.json)?$')
_RESOURCE = re.compile(r'^/v2\.0/([a-z0-9_-]+)/([^/]+?)(?:\.json)?$')


def _key(collection):
    """The body key of a collection: security-groups -> security_groups."""
    return collection.replace('-', '_')


class Neutron:
    """``with Neutron() as neutron``: serving on ``neutron.url``."""

    def __init__(self):
        self.requests = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), self._handler())
        self._server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True, name='neutron')

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._server.shutdown()
        self._server.server_close()

    def writes(self):
        """(method, path) of every request that was not a read."""
        with self._lock:
            return [(m, p) for m, p in self.requests if m != 'GET']

    def _record(self, method, path):
        with self._lock:
            self.requests.append((method, path))

    def _handler(self):
        neutron = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def do_GET(self):
                path = self.path.split('?', 1)[0].rstrip('/') or '/'
                neutron._record('GET', path)
                if path == '/':
                    return self._reply(200, {'versions': [{
                        'id': 'v2.0', 'status': 'CURRENT', 'links': [{
                            'rel': 'self',
                            'href': neutron.url + '/v2.0/'}]}]})
                if path == '/v2.0':
                    return self._reply(200, {'resources': []})
                found = _COLLECTION.match(path)
                if found:
                    return self._reply(200, {_key(found.group(1)): []})
                found = _RESOURCE.match(path)
                if found:
                    return self._not_found(found.group(1), found.group(2))
                return self._not_found('resource', path)

            def _write(self):
                length = int(self.headers.get('Content-Length') or 0)
                if length:
                    self.rfile.read(length)
                path = self.path.split('?', 1)[0]
                neutron._record(self.command, path)
                self._not_found('resource', path)

            do_POST = do_PUT = do_DELETE = _write

            def _not_found(self, kind, what):
                self._reply(404, {'NeutronError': {
                    'type': 'NotFound', 'detail': '',
                    'message': '%s %s could not be found.' % (kind, what)}})

            def _reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                """Quiet: every request is in ``requests`` already."""

        return Handler
