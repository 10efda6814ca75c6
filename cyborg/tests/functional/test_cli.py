"""The ``openstack accelerator`` CLI, both flavours, run as a user runs it."""

import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import uuid

import pytest
import requests

from cyborg import embedded_placement
from cyborg.api import hooks
from cyborg.tests import backends
from cyborg.tests import processes

pytestmark = pytest.mark.functional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# legacy: python-openstackclient < 10.4 with python-cyborgclient's plugin;
# intree: python-openstackclient >= 10.4, whose own commands replace it.
FLAVOURS = ('legacy', 'intree')
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
PROJECT = hooks.NOAUTH_IDENTITY['HTTP_X_PROJECT_ID']
TIMEOUT = 60
PCI = {'domain': '0000', 'bus': '0c', 'device': '00', 'function': '0'}


# --- The two CLIs ------------------------------------------------------------


@pytest.fixture(scope='session')
def cli_venvs():
    """{flavour: its ``openstack``}, built by tools/cli-venvs.sh if needed."""
    built = subprocess.run(
        ['bash', os.path.join(REPO, 'tools', 'cli-venvs.sh'), *FLAVOURS],
        env=dict(os.environ, PYTHON=sys.executable), capture_output=True,
        text=True, timeout=1200, check=False)
    assert built.returncode == 0, 'tools/cli-venvs.sh exited %d:\n%s%s' % (
        built.returncode, built.stdout, built.stderr[-20000:])
    return {name: os.path.join(REPO, '.cli-venvs', name, 'bin', 'openstack')
            for name in FLAVOURS}


class Cli:
    """``openstack`` of one flavour, pointed at a noauth Cyborg API."""

    def __init__(self, flavour, executable, url):
        self.flavour = flavour
        self.executable = executable
        self.url = url
        # NOTE(tests): a developer's OS_CLOUD or OS_AUTH_URL would send the
        # CLI to Keystone; it gets only what a command line gives it.
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith('OS_')}

    def run(self, *args, version=None, env=None):
        """The CompletedProcess of one command."""
        # NOTE(tests): auth type none sends no identity, which the noauth
        # API takes for an admin with a service token; the endpoint is the
        # versioned one a catalog would list.
        command = [self.executable, '--os-auth-type', 'none',
                   '--os-endpoint', self.url + '/v2']
        if version is not None:
            command += ['--os-accelerator-api-version', version]
        return subprocess.run(command + list(args), capture_output=True,
                              text=True, timeout=TIMEOUT, check=False,
                              env=dict(self.env, **(env or {})))

    def json(self, *args, **kwargs):
        """Run with ``-f json``; it must exit 0; its parsed output."""
        done = self.run(*args, '-f', 'json', **kwargs)
        assert done.returncode == 0, explain(self, done)
        return json.loads(done.stdout)

    def ok(self, *args, **kwargs):
        done = self.run(*args, **kwargs)
        assert done.returncode == 0, explain(self, done)
        return done.stdout


def explain(cli, done):
    return '%s: %s exited %d\nstdout: %s\nstderr: %s' % (
        cli.flavour, ' '.join(done.args[1:]), done.returncode,
        done.stdout[-4000:], done.stderr[-4000:])


# --- The deployments ---------------------------------------------------------


def _deployable(url):
    """The fake driver's deployable, once it has its provider."""
    resp = requests.get(url + '/v2/deployables', timeout=10)
    if resp.status_code != 200:
        return None
    found = resp.json()['deployables']
    return found[0] if len(found) == 1 and found[0]['rp_uuid'] else None


@contextlib.contextmanager
def _all_in_one(tmp_path):
    port, placement_port = processes.free_port(), processes.free_port()
    conf = processes.write_config(tmp_path / 'aio.conf', {
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': 'aio'},
        'api': {'port': port},
        'embedded_placement': {'port': placement_port},
    })
    proc = processes.Process('cyborg-all-in-one', conf, tmp_path)
    url = 'http://127.0.0.1:%d' % port
    try:
        processes.wait_for(lambda: _deployable(url), TIMEOUT, interval=0.1,
                           what='the fake deployable')
        yield {'url': url, 'host': 'aio'}
    finally:
        code = proc.stop(signal.SIGINT)
    assert code == 0, proc.log()[-4000:]
    assert 'Traceback' not in proc.log(), proc.log()


class PlacementProcess:
    """``python -m cyborg.tests.placement`` with the compute node's root."""

    def __init__(self, connection, host, log_dir):
        self.url = 'http://127.0.0.1:%d' % processes.free_port()
        self.log_path = os.path.join(str(log_dir), 'placement.log')
        self._log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'cyborg.tests.placement', '--connection',
             connection, '--port', self.url.rsplit(':', 1)[1],
             '--compute-node', host],
            stdout=self._log, stderr=subprocess.STDOUT, text=True)

    def log(self):
        with open(self.log_path) as log:
            return log.read()

    def wait_listening(self):
        def listening():
            if self.proc.poll() is not None:
                raise AssertionError('Placement exited %s:\n%s'
                                     % (self.proc.returncode, self.log()))
            return 'Placement listening on' in self.log()

        processes.wait_for(listening, TIMEOUT, what='Placement to listen')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


@contextlib.contextmanager
def _services(tmp_path):
    host = 'node-%s' % uuid.uuid4().hex[:8]
    with backends.temp_database('mysql') as db_url, \
            backends.temp_database('mysql') as placement_db, \
            backends.temp_rabbit_vhost() as transport_url:
        placement = PlacementProcess(placement_db, host, tmp_path)
        procs = []
        try:
            confs, port = processes.stack_configs(
                tmp_path, host, db_url, transport_url, {
                    'agent': {'enabled_drivers': 'fake_driver',
                              'report_interval': 1},
                    'fake_driver': {'device_count': 1,
                                    'accelerators_per_device': 4},
                    'placement': {'auth_type': 'admin_token',
                                  'endpoint': placement.url,
                                  'token': embedded_placement.ADMIN_TOKEN},
                })
            placement.wait_listening()
            procs.append(processes.Process(
                'cyborg-conductor', confs['cyborg-conductor'], tmp_path))
            # NOTE(tests): an agent report sent before the conductor
            # listens waits out the RPC timeout.
            processes.wait_for(lambda: 'started on host' in procs[0].log(),
                               TIMEOUT, what='the conductor to listen')
            procs += [processes.Process(name, confs[name], tmp_path)
                      for name in ('cyborg-agent', 'cyborg-api')]
            url = 'http://127.0.0.1:%d' % port
            processes.wait_for(lambda: _deployable(url), TIMEOUT,
                               what='the fake deployable in Placement')
            yield {'url': url, 'host': host}
        finally:
            if procs:
                processes.stop_cleanly(procs)
            code = placement.stop()
        assert code == 0, placement.log()[-4000:]
        assert 'Traceback' not in placement.log(), placement.log()


@pytest.fixture(scope='module', params=['all-in-one', 'services'])
def target(request, tmp_path_factory):
    """The embedded default, or API, conductor and agent as processes."""
    start = _all_in_one if request.param == 'all-in-one' else _services
    with start(tmp_path_factory.mktemp(request.param)) as found:
        yield found


@pytest.fixture(params=FLAVOURS)
def cli(request, cli_venvs, target):
    return Cli(request.param, cli_venvs[request.param], target['url'])


class _Servers(http.server.BaseHTTPRequestHandler):
    """Just enough of Nova's API for the CLI to look a server up."""

    def do_GET(self):
        parts = self.path.split('?')[0].strip('/').split('/')
        if len(parts) == 3 and parts[1] == 'servers':
            body = {'server': {'id': parts[2], 'name': 'vm'}}
        else:
            body = {'version': {
                'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                'min_version': '2.1', 'links': [{
                    'rel': 'self', 'href': 'http://%s/v2.1/'
                    % self.headers['Host']}]}}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def nova_url():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Servers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d/v2.1' % server.server_address[1]
    server.shutdown()
    server.server_close()


# --- Helpers -----------------------------------------------------------------


def _api(target, method, path, **kwargs):
    return requests.request(method, target['url'] + '/v2' + path,
                            timeout=30, **kwargs)


@pytest.fixture
def profile(target):
    """A device profile made through the API; its ARQs go with it."""
    name = 'cli-%s' % uuid.uuid4().hex[:8]
    made = _api(target, 'POST', '/device_profiles',
                json=[{'name': name, 'groups': [GROUP]}])
    assert made.status_code == 201, made.text
    yield made.json()
    arqs = [a['uuid'] for a in
            _api(target, 'GET', '/accelerator_requests').json()['arqs']
            if a['device_profile_name'] == name]
    if arqs:
        gone = _api(target, 'DELETE', '/accelerator_requests',
                    params={'arqs': ','.join(arqs)})
        assert gone.status_code == 204, gone.text
    gone = _api(target, 'DELETE', '/device_profiles/%s' % made.json()['uuid'])
    assert gone.status_code == 204, gone.text


def _arq_state(target, arq):
    return _api(target, 'GET', '/accelerator_requests/%s' % arq).json()[
        'state']


# --- Tests -------------------------------------------------------------------


def test_device_list_and_show(cli, target):
    listed = cli.json('accelerator', 'device', 'list')
    assert [(d['hostname'], d['type'], d['vendor']) for d in listed] == [
        (target['host'], 'FPGA', '0xABCD')]
    # NOTE(tests): the in-tree client shows status only if asked for 2.3,
    # which cyborgclient asks for by default.
    shown = cli.json('accelerator', 'device', 'show', listed[0]['uuid'],
                     version='2.3')
    assert shown['uuid'] == listed[0]['uuid']
    assert (shown['hostname'], shown['model'], shown['status']) == (
        target['host'], 'Fake FPGA', 'inactive')
    assert json.loads(shown['std_board_info']) == json.loads(
        listed[0]['std_board_info'])


def test_deployable_list_and_show(cli, target):
    listed = cli.json('accelerator', 'deployable', 'list')
    assert [d['name'] for d in listed] == ['%s_FakeDevice' % target['host']]
    shown = cli.json('accelerator', 'deployable', 'show', listed[0]['uuid'])
    assert (shown['uuid'], shown['name']) == (listed[0]['uuid'],
                                              listed[0]['name'])
    assert shown['created_at']


def test_device_profile_create_list_show_delete(cli, target):
    name = 'cli-%s-%s' % (cli.flavour, uuid.uuid4().hex[:8])
    if cli.flavour == 'legacy':
        groups = [json.dumps([GROUP])]
    else:
        groups = ['--group', ','.join('%s=%s' % item
                                      for item in GROUP.items())]
    created = cli.json('accelerator', 'device', 'profile', 'create', name,
                       *groups, '--description', 'from the CLI')
    assert uuid.UUID(created['uuid'])
    assert (created['name'], created['groups'], created['description']) == (
        name, [GROUP], 'from the CLI')
    dp = created['uuid']

    listed = {p['uuid']: p for p in
              cli.json('accelerator', 'device', 'profile', 'list')}
    assert (listed[dp]['name'], listed[dp]['groups']) == (name, [GROUP])
    assert cli.json('accelerator', 'device', 'profile', 'show', dp) == created
    # NOTE(tests): names are looked up from 2.2 on, which only
    # cyborgclient asks for by default.
    by_name = cli.json('accelerator', 'device', 'profile', 'show', name,
                       version='2.2')
    assert by_name == created

    cli.ok('accelerator', 'device', 'profile', 'delete', dp)
    missing = cli.run('accelerator', 'device', 'profile', 'show', dp)
    assert missing.returncode == 1, explain(cli, missing)
    assert dp in missing.stderr
    assert _api(target, 'GET', '/device_profiles/%s' % dp).status_code == 404


def test_arq_create_list_show_delete(cli, target, profile):
    created = cli.json('accelerator', 'arq', 'create', profile['name'])
    arq = created['uuid']
    assert uuid.UUID(arq)
    assert (created['state'], created['device_profile_name']) == (
        'Initial', profile['name'])
    assert (created['hostname'], created['device_rp_uuid'],
            created['instance_uuid']) == (None, None, None)
    assert (created['attach_handle_type'],
            created['attach_handle_info']) == ('', {})

    listed = {a['uuid']: a for a in cli.json('accelerator', 'arq', 'list')}
    assert (listed[arq]['state'], listed[arq]['device_profile_name']) == (
        'Initial', profile['name'])
    assert cli.json('accelerator', 'arq', 'show', arq) == created

    cli.ok('accelerator', 'arq', 'delete', arq)
    missing = cli.run('accelerator', 'arq', 'show', arq)
    assert missing.returncode == 1, explain(cli, missing)
    assert arq in missing.stderr
    assert _api(target, 'GET',
                '/accelerator_requests/%s' % arq).status_code == 404


def test_arq_bind_unbind_delete(cli, target, profile, nova_url):
    # NOTE(tests): made as Nova makes it, so that binding is tested apart
    # from the CLI's create.
    made = _api(target, 'POST', '/accelerator_requests',
                json={'device_profile_name': profile['name']})
    assert made.status_code == 201, made.text
    (arq,) = [a['uuid'] for a in made.json()['arqs']]
    rp_uuid = _deployable(target['url'])['rp_uuid']
    instance = str(uuid.uuid4())

    bind = ['accelerator', 'arq', 'bind', arq, target['host'], instance,
            rp_uuid]
    env = None
    if cli.flavour == 'legacy':
        # NOTE(tests): cyborgclient requires a project but never sends it.
        bind.append(PROJECT)
    else:
        # NOTE(tests): the in-tree client asks Nova for the server first;
        # without a catalog its endpoint is given like the CLI's own.
        env = {'OS_COMPUTE_ENDPOINT_OVERRIDE': nova_url}
    started = cli.json(*bind, env=env)
    assert started['uuid'] == arq
    assert started['state'] in ('BindStarted', 'Bound')
    assert (started['hostname'], started['device_rp_uuid'],
            started['instance_uuid']) == (target['host'], rp_uuid, instance)

    processes.wait_for(lambda: _arq_state(target, arq) in ('Bound',
                                                           'BindFailed'),
                       TIMEOUT, what='the ARQ to be resolved')
    bound = cli.json('accelerator', 'arq', 'show', arq)
    assert (bound['state'], bound['attach_handle_type'],
            bound['attach_handle_info']) == ('Bound', 'TEST_PCI', PCI)
    assert (bound['hostname'], bound['device_rp_uuid'],
            bound['instance_uuid']) == (target['host'], rp_uuid, instance)
    listed = {a['uuid']: a for a in
              cli.json('accelerator', 'arq', 'list', '--long')}
    assert listed[arq] == {key: bound[key] for key in listed[arq]}

    unbound = cli.json('accelerator', 'arq', 'unbind', arq)
    assert (unbound['uuid'], unbound['state']) == (arq, 'Unbound')
    assert (unbound['hostname'], unbound['device_rp_uuid'],
            unbound['instance_uuid'], unbound['attach_handle_type'],
            unbound['attach_handle_info']) == (None, None, None, '', {})

    cli.ok('accelerator', 'arq', 'delete', arq)
    assert _api(target, 'GET',
                '/accelerator_requests/%s' % arq).status_code == 404
