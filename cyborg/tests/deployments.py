"""Cyborg deployments the functional tests start, and a fake Nova API."""

import contextlib
import http.server
import json
import signal
import sys
import threading
import time
import urllib.parse
import uuid

import requests

from cyborg import embedded_placement
from cyborg.tests import backends
from cyborg.tests import processes
from cyborg.tests import tcp_proxy

TIMEOUT = 60
KINDS = ('all-in-one', 'services')
EVENTS_PATH = '/v2.1/os-server-external-events'


class PlacementProcess(processes.Process):
    """``python -m cyborg.tests.placement`` with a compute node's root.

    It keeps its port when stopped and started again. Several processes
    given the same ``port`` with ``reuse_port`` serve it together, as the
    worker processes of a production Placement do.
    """

    def __init__(self, connection, compute_node, log_dir, port=None,
                 reuse_port=False, name='placement'):
        port = port or processes.free_port()
        self.url = 'http://127.0.0.1:%d' % port
        command = [sys.executable, '-m', 'cyborg.tests.placement',
                   '--connection', connection, '--port', str(port),
                   '--compute-node', compute_node]
        if reuse_port:
            command.append('--reuse-port')
        super().__init__(name, None, log_dir, command=command)

    def wait_listening(self):
        def listening():
            text = self.log()[self.offset:]
            if not self.alive():
                raise AssertionError('Placement exited %s:\n%s'
                                     % (self.proc.returncode, text))
            return 'Placement listening on %s' % self.url in text

        processes.wait_for(listening, TIMEOUT, interval=0.05,
                           what='Placement to listen')
        return self

    def client(self):
        return embedded_placement.client_for(self.url)


class Deployment:
    """A running deployment whose agent reports the fake driver's devices.

    ``conductor`` is the process that logs what the conductor does; each
    of ``procs`` must exit 0 without a trace when stop() stops it.
    ``token``, when the API checks tokens, returns one that may list the
    deployables.
    """

    def __init__(self, url, placement_url, host, procs, conductor,
                 token=None):
        self.url = url
        self.placement_url = placement_url
        self.host = host
        self.procs = procs
        self.conductor = conductor
        self.token = token
        #: Every conductor process; services() may start several.
        self.conductors = [conductor]
        #: services(proxied=True)'s TcpProxy of 'database' and 'transport'.
        self.proxies = {}
        #: The database URL without any proxy (what a test inspects).
        self.db_url = None

    def process(self, name):
        """The process called ``name`` (cyborg-api, cyborg-agent...)."""
        return next(p for p in self.procs if p.name == name)

    def headers(self):
        """The headers that get a request past the API's authentication."""
        return {'X-Auth-Token': self.token()} if self.token else {}

    def deployables(self):
        """The API's deployables, or None before it answers."""
        try:
            resp = requests.get(self.url + '/v2/deployables',
                                headers=self.headers(), timeout=10)
        except (requests.ConnectionError, requests.Timeout):
            return None
        if resp.status_code != 200:
            return None
        return resp.json()['deployables']

    def only_device(self, version='2.6'):
        """The one device the API lists, at microversion ``version``."""
        headers = dict(self.headers(),
                       **{'OpenStack-API-Version': 'accelerator ' + version})
        resp = requests.get(self.url + '/v2/devices', headers=headers,
                            timeout=TIMEOUT)
        assert resp.status_code == 200, resp.text
        (device,) = resp.json()['devices']
        return device

    def activate_devices(self):
        """Activate every device that is not ready yet, as an operator
        does before the scheduler (or a bind) may use it, and wait until
        each is ready."""
        headers = dict(self.headers(),
                       **{'OpenStack-API-Version': 'accelerator 2.4'})

        def devices():
            resp = requests.get(self.url + '/v2/devices', headers=headers,
                                timeout=TIMEOUT)
            assert resp.status_code == 200, resp.text
            return resp.json()['devices']

        for device in devices():
            if device['status'] in ('inactive', 'error'):
                resp = requests.post(
                    '%s/v2/devices/%s/activate' % (self.url, device['uuid']),
                    headers=headers, timeout=TIMEOUT)
                assert resp.status_code == 200, resp.text
        processes.wait_for(
            lambda: all(d['status'] == 'ready' for d in devices()), TIMEOUT,
            interval=0.1, what='every device to be ready')

    def wait_ready(self):
        """Wait until every deployable has its provider in Placement."""
        def ready():
            # NOTE(tests): a process that died will never be ready; its log
            # says why.
            for proc in self.procs:
                if not proc.alive():
                    raise AssertionError('%s exited %s:\n%s' % (
                        proc.name, proc.proc.returncode,
                        proc.log()[proc.offset:][-4000:]))
            found = self.deployables()
            return found and all(d['rp_uuid'] for d in found)

        processes.wait_for(ready, TIMEOUT, interval=0.1,
                           what='the fake deployables in Placement')

    def stop(self):
        _stop(self.procs)


def _stop(procs):
    for proc in procs:
        if proc.name in ('cyborg-agent', 'cyborg-api'):
            proc.signal()
    agent = next((p for p in procs if p.name == 'cyborg-agent'), None)
    try:
        # NOTE(tests): an agent's pass may call the conductor and Placement
        # until it has stopped, so they are stopped only then; its exit
        # after that goes on alongside theirs.
        if agent is not None:
            processes.wait_for(
                lambda: not agent.alive() or
                'stopped on host' in agent.log()[agent.offset:], 30,
                interval=0.05, what='the agent to stop')
    finally:
        processes.stop_cleanly(procs, [procs])


@contextlib.contextmanager
def all_in_one(tmp_path, sections=None, port=None, token=None):
    """The embedded default ``cyborg-all-in-one``; ``sections`` are added to
    its configuration file.

    :param port: the API's, when it must be known before; a free one else.
    :param token: the Deployment's, for an API that checks tokens.
    """
    port = port or processes.free_port()
    placement_port = processes.free_port()
    conf = processes.write_config(tmp_path / 'aio.conf', dict({
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': 'aio'},
        'api': {'port': port},
        'embedded_placement': {'port': placement_port},
    }, **(sections or {})))
    # NOTE(tests): stopped with Ctrl-C, as whoever started it would.
    proc = processes.Process('cyborg-all-in-one', conf, tmp_path,
                             stop_signal=signal.SIGINT)
    found = Deployment('http://127.0.0.1:%d' % port,
                       'http://127.0.0.1:%d' % placement_port, 'aio', [proc],
                       proc, token=token)
    try:
        found.wait_ready()
        yield found
    finally:
        found.stop()


@contextlib.contextmanager
def all_in_one_behind_keystone(tmp_path, keystone, sections=None):
    """all_in_one() on ``[api] auth_strategy = keystone``.

    Its API checks tokens with ``keystone`` (a started
    cyborg.tests.keystone.Keystone), as that Keystone's ``cyborg`` user,
    and is listed in its catalog as the accelerator service before it
    starts. The Deployment's token is the admin's.

    :param sections: added to the configuration file, option by option.
    """
    port = processes.free_port()
    keystone.register_accelerator('http://127.0.0.1:%d' % port)
    merged = {'api': {'port': port, 'auth_strategy': 'keystone'},
              'keystone_authtoken': keystone.authtoken_options()}
    for section, options in (sections or {}).items():
        merged[section] = dict(merged.get(section, {}), **options)
    with all_in_one(tmp_path, sections=merged, port=port,
                    token=keystone.admin_token) as found:
        yield found


@contextlib.contextmanager
def services(tmp_path, handles=4, devices=1, sections=None, conductors=1,
             proxied=False):
    """cyborg-api, cyborg-conductor and cyborg-agent as processes.

    They talk over a RabbitMQ vhost of their own, with a MariaDB database
    of their own; Placement is a process on a second database. The agent
    runs the fake driver with ``devices`` devices of ``handles`` handles.

    :param sections: sections every service's configuration file gets.
    :param conductors: how many conductors run (ctl-1, ctl-2...); the
        second one's process is called cyborg-conductor-2, and so on.
    :param proxied: the services reach the database and RabbitMQ through
        the Deployment's ``proxies`` (tcp_proxy.TcpProxy), which a test
        cuts to simulate an outage; Placement's database is not proxied.
    """
    host = 'node-%s' % uuid.uuid4().hex[:8]
    with backends.temp_database('mysql') as db_url, \
            backends.temp_database('mysql') as placement_db, \
            backends.temp_rabbit_vhost() as transport_url, \
            contextlib.ExitStack() as proxy_stack:
        proxies = {}
        direct_db_url = db_url
        if proxied:
            proxies['database'] = proxy_stack.enter_context(
                tcp_proxy.TcpProxy((backends.HOST, backends.MYSQL_PORT)))
            proxies['transport'] = proxy_stack.enter_context(
                tcp_proxy.TcpProxy((backends.HOST, backends.RABBITMQ_PORT)))
            db_url = proxies['database'].url_for(db_url)
            transport_url = proxies['transport'].url_for(transport_url)
        placement = PlacementProcess(placement_db, host, tmp_path)
        procs = [placement]
        try:
            # NOTE(tests): the conductor reads Placement too (to explain
            # a device profile), so every service gets [placement].
            common = {'placement': {'auth_type': 'admin_token',
                                    'endpoint': placement.url,
                                    'token': embedded_placement.ADMIN_TOKEN}}
            for section, options in (sections or {}).items():
                common[section] = dict(common.get(section, {}), **options)
            confs, port = processes.stack_configs(
                tmp_path, host, db_url, transport_url, {
                    'agent': {'enabled_drivers': 'fake_driver',
                              'report_interval': 1},
                    'fake_driver': {'device_count': devices,
                                    'accelerators_per_device': handles},
                }, extra=common)
            procs += [processes.Process(name, confs[name], tmp_path)
                      for name in ('cyborg-conductor', 'cyborg-api')]
            conductor = procs[1]
            others = [_another_conductor(confs['cyborg-conductor'], index,
                                         tmp_path)
                      for index in range(2, conductors + 1)]
            procs += others
            placement.wait_listening()
            # NOTE(tests): an agent report sent before the conductor
            # listens waits out the RPC timeout.
            for proc in [conductor] + others:
                processes.wait_for(
                    lambda proc=proc: 'started on host' in proc.log(),
                    TIMEOUT, interval=0.05, what='%s to listen' % proc.name)
            procs.append(processes.Process(
                'cyborg-agent', confs['cyborg-agent'], tmp_path))
            found = Deployment('http://127.0.0.1:%d' % port, placement.url,
                               host, procs, conductor)
            found.conductors += others
            found.proxies = proxies
            found.db_url = direct_db_url
            found.wait_ready()
            yield found
        finally:
            _stop(procs)


def _another_conductor(conf, index, log_dir):
    """Conductor ``ctl-<index>`` with ``conf`` otherwise."""
    with open(conf) as handle:
        text = handle.read()
    path = str(conf).replace('.conf', '-%d.conf' % index)
    with open(path, 'w') as handle:
        handle.write(text.replace('host = ctl-1', 'host = ctl-%d' % index))
    return processes.Process(
        'cyborg-conductor-%d' % index, path, log_dir,
        command=[processes.script('cyborg-conductor'), '--config-file',
                 path])


def start(kind, tmp_path, **options):
    """all_in_one() or services() by the name in KINDS; ``options`` are
    services()' own."""
    if kind == 'all-in-one':
        return all_in_one(tmp_path, sections=options.get('sections'))
    return services(tmp_path, **options)


class FakeNova:
    """Just enough of Nova's compute API for Cyborg and its clients.

    It answers version discovery, shows and lists the servers ``own()``
    registered (any other is a 404 itemNotFound, as Nova answers for an
    instance it does not have), and answers os-server-external-events as
    Nova's API does, recording each request. Shows are recorded in
    ``shown``. An instance in ``on_host`` gets per-event code 200; any
    other one has
    no host yet (nova-conductor binds before the compute claims it), which
    Nova answers with 207 and code 422 for each of its events. Events of an
    instance in ``gone`` get a 404 for the whole request, as Nova before
    LP#1855752's fix answered when it accepted no event. Events of an
    instance in ``slow`` are answered after that many seconds.
    """

    def __init__(self):
        self.requests = []
        self.servers = {}
        self.shown = []
        self.on_host = set()
        self.gone = set()
        self.slow = {}
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        args=(0.05,), daemon=True)

    @property
    def url(self):
        return 'http://127.0.0.1:%d/v2.1' % self._server.server_address[1]

    def section(self):
        """The [nova] options that send Cyborg here."""
        # NOTE(tests): Nova's API takes no token here: auth_type none, and
        # the versioned endpoint a catalog would list.
        return {'auth_type': 'none', 'endpoint_override': self.url}

    def own(self, instance, project, name='vm', status='ACTIVE'):
        """Make ``instance`` a server of ``project``; returns its body."""
        server = {'id': instance, 'name': name, 'status': status,
                  'tenant_id': project, 'user_id': 'user-of-%s' % project,
                  'metadata': {}, 'links': [{
                      'rel': 'self',
                      'href': '%s/servers/%s' % (self.url, instance)}]}
        with self._lock:
            self.servers[instance] = server
        return server

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        nova = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path, _, query = self.path.partition('?')
                parts = path.strip('/').split('/')
                if parts[1:] in (['servers'], ['servers', 'detail']):
                    return self._list(urllib.parse.parse_qs(query))
                if len(parts) == 3 and parts[1] == 'servers':
                    return self._show(parts[2])
                self._reply(200, {'version': {
                    'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                    'min_version': '2.1', 'links': [{
                        'rel': 'self', 'href': 'http://%s/v2.1/'
                        % self.headers['Host']}]}})

            def _show(self, instance):
                with nova._lock:
                    nova.shown.append({'headers': dict(self.headers),
                                       'instance': instance})
                    server = nova.servers.get(instance)
                if server is None:
                    return self._reply(404, {'itemNotFound': {
                        'code': 404, 'message': 'Instance %s could not be '
                                                'found.' % instance}})
                self._reply(200, {'server': server})

            def _list(self, query):
                with nova._lock:
                    servers = list(nova.servers.values())
                names = query.get('name')
                if names:
                    servers = [s for s in servers if s['name'] in names]
                self._reply(200, {'servers': servers})

            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length) or b'null')
                if self.path != EVENTS_PATH:
                    return self._reply(404, {'itemNotFound': {
                        'code': 404, 'message': 'no route'}})
                with nova._lock:
                    nova.requests.append({'headers': dict(self.headers),
                                          'body': body})
                    on_host = set(nova.on_host)
                    gone = set(nova.gone)
                    delay = max([nova.slow.get(e['server_uuid'], 0)
                                 for e in body['events']])
                time.sleep(delay)
                if {e['server_uuid'] for e in body['events']} <= gone:
                    return self._reply(404, {'itemNotFound': {
                        'code': 404,
                        'message': 'No instances found for any event'}})
                answers, result = [], 200
                for event in body['events']:
                    answer = dict(event)
                    if event['server_uuid'] in on_host:
                        answer['code'] = 200
                    else:
                        answer.update(status='failed', code=422)
                        result = 207
                    answers.append(answer)
                self._reply(result, {'events': answers})

            def _reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                """Quiet: the test asserts on what was recorded."""

        return Handler

    def events_of(self, instance):
        """(headers, events) of every request naming ``instance``."""
        with self._lock:
            return [(r['headers'], r['body']['events']) for r in self.requests
                    if any(e['server_uuid'] == instance
                           for e in r['body']['events'])]

    def wait_events(self, instance, count):
        """Wait until Nova got ``count`` events for ``instance``."""
        def arrived():
            found = self.events_of(instance)
            return found if sum(len(e) for _h, e in found) >= count else None
        return processes.wait_for(arrived, TIMEOUT, what='%d events of %s'
                                  % (count, instance))
