"""Fake Glance (it cannot run here), and serving fakes to our clients."""

import contextlib
import json
import re
import threading
import urllib.parse
import uuid
import wsgiref.simple_server

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from cyborg import service

CONF = cfg.CONF
_IMAGE = re.compile(r'^/v2/images/([^/]+)(/file)?$')


class FakeGlance:
    """Images by id with their properties and data; records requests."""

    def __init__(self):
        self.images = {}
        self.requests = []

    def add(self, data=b'bitstream', status='active', **properties):
        image_id = str(uuid.uuid4())
        self.images[image_id] = (dict(properties, id=image_id,
                                      status=status), data)
        return image_id

    def __call__(self, environ, start_response):
        path = environ['PATH_INFO']
        query = dict(urllib.parse.parse_qsl(environ.get('QUERY_STRING', '')))
        self.requests.append((path, query))
        if path == '/v2/images':
            found = [record for record, _data in self.images.values()
                     if all(record.get(k) == v for k, v in query.items())]
            return self._json(start_response, {'images': found})
        match = _IMAGE.match(path)
        if match is None or match.group(1) not in self.images:
            start_response('404 Not Found', [('Content-Type', 'text/plain')])
            return [b'no such image']
        record, data = self.images[match.group(1)]
        if match.group(2):
            start_response('200 OK', [
                ('Content-Type', 'application/octet-stream'),
                ('Content-Length', str(len(data)))])
            return [data]
        return self._json(start_response, record)

    @staticmethod
    def _json(start_response, body):
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]


def point(group, url, override):
    """Point the keystoneauth options of ``group`` at ``url`` (admin_token
    auth, any token)."""
    # NOTE(tests): always admin_token: the options of another plugin with
    # an option of the same name (none's endpoint) could not be registered
    # beside these in the session's one CONF.
    CONF.register_opts(
        ks_loading.get_auth_plugin_conf_options('admin_token'),
        group=group)
    override('auth_type', 'admin_token', group=group)
    override('endpoint', url, group=group)
    override('token', '%s-token' % group, group=group)


@contextlib.contextmanager
def serving_app(app, group, override):
    """Serve ``app`` on a free port and point the keystoneauth options of
    ``group`` at it (see ``point``)."""
    server = service.WSGIService(group, app, '127.0.0.1', 0, 4)
    server.start()
    try:
        point(group, server.url, override)
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def serving(override):
    """A FakeGlance on a free port, and [glance] pointing at it."""
    glance = FakeGlance()
    with serving_app(glance, 'glance', override):
        yield glance


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        """Tests assert on what the fake was asked, not on its log."""


@contextlib.contextmanager
def serve_glance():
    """A FakeGlance on a free port of 127.0.0.1, served by a thread of
    this process; its ``url`` is set."""
    glance = FakeGlance()
    server = wsgiref.simple_server.make_server(
        '127.0.0.1', 0, glance, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                              daemon=True)
    thread.start()
    try:
        glance.url = 'http://127.0.0.1:%d' % server.server_port
        yield glance
    finally:
        server.shutdown()
        server.server_close()
