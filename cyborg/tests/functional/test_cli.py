"""The ``openstack accelerator`` CLI, both flavours, run as a user runs it."""

import json
import os
import subprocess
import sys
import uuid

import pytest
import requests

from cyborg.api import hooks
from cyborg.tests import deployments
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


def build_cli_venvs():
    """{flavour: its ``openstack``}, built by tools/cli-venvs.sh if needed
    (at once when they are built already)."""
    built = subprocess.run(
        ['bash', os.path.join(REPO, 'tools', 'cli-venvs.sh'), *FLAVOURS],
        env=dict(os.environ, PYTHON=sys.executable), capture_output=True,
        text=True, timeout=1200, check=False)
    assert built.returncode == 0, 'tools/cli-venvs.sh exited %d:\n%s%s' % (
        built.returncode, built.stdout, built.stderr[-20000:])
    return {name: os.path.join(REPO, '.cli-venvs', name, 'bin', 'openstack')
            for name in FLAVOURS}


@pytest.fixture(scope='session')
def cli_venvs():
    return build_cli_venvs()


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


@pytest.fixture(scope='module', params=deployments.KINDS)
def target(request, tmp_path_factory):
    """The embedded default, or API, conductor and agent as processes."""
    with deployments.start(request.param,
                           tmp_path_factory.mktemp(request.param)) as found:
        yield found


@pytest.fixture(params=FLAVOURS)
def cli(request, cli_venvs, target):
    return Cli(request.param, cli_venvs[request.param], target.url)


@pytest.fixture(scope='module')
def nova():
    with deployments.FakeNova() as fake:
        yield fake


# --- Helpers -----------------------------------------------------------------


def _api(target, method, path, **kwargs):
    return requests.request(method, target.url + '/v2' + path,
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
        (target.host, 'FPGA', '0xABCD')]
    # NOTE(tests): the in-tree client shows status only if asked for 2.3,
    # which cyborgclient asks for by default; at 2.3 an inactive device
    # reads as upstream's "maintaining".
    shown = cli.json('accelerator', 'device', 'show', listed[0]['uuid'],
                     version='2.3')
    assert shown['uuid'] == listed[0]['uuid']
    assert (shown['hostname'], shown['model'], shown['status']) == (
        target.host, 'Fake FPGA', 'maintaining')
    assert json.loads(shown['std_board_info']) == json.loads(
        listed[0]['std_board_info'])


def test_device_list_long_shows_upstream_status(cli, target):
    # 2.3 clients compare against upstream's two values: enabled for a
    # ready device, maintaining for any other state.
    lifecycle = {d['uuid']: d['status'] for d in _api(
        target, 'GET', '/devices', headers={
            'OpenStack-API-Version': 'accelerator 2.4'}).json()['devices']}
    listed = cli.json('accelerator', 'device', 'list', '--long',
                      version='2.3')
    assert {d['uuid']: d['status'] for d in listed} == {
        uuid: 'enabled' if status == 'ready' else 'maintaining'
        for uuid, status in lifecycle.items()}


def test_deployable_list_and_show(cli, target):
    listed = cli.json('accelerator', 'deployable', 'list')
    assert [d['name'] for d in listed] == ['%s_FakeDevice' % target.host]
    shown = cli.json('accelerator', 'deployable', 'show', listed[0]['uuid'])
    assert (shown['uuid'], shown['name']) == (listed[0]['uuid'],
                                              listed[0]['name'])
    assert shown['created_at']


def test_device_attribute_create_list_show_delete(cli, target):
    """openstacksdk's create sends {"attribute": {...}}, which both
    clients' ``attribute create`` rely on."""
    (deployable,) = _api(target, 'GET', '/deployables').json()['deployables']
    key = 'cli_%s_%s' % (cli.flavour, uuid.uuid4().hex[:8])
    created = cli.json('accelerator', 'device', 'attribute', 'create',
                       deployable['uuid'], key, 'from the CLI')
    attribute = created['uuid']
    assert uuid.UUID(attribute)
    assert (created['key'], created['value']) == (key, 'from the CLI')

    listed = {a['uuid']: a for a in
              cli.json('accelerator', 'device', 'attribute', 'list')}
    assert (listed[attribute]['key'], listed[attribute]['value']) == (
        key, 'from the CLI')
    shown = cli.json('accelerator', 'device', 'attribute', 'show',
                     attribute)
    assert (shown['uuid'], shown['key'], shown['value']) == (
        attribute, key, 'from the CLI')
    found = _api(target, 'GET', '/attributes/%s' % attribute)
    assert found.status_code == 200, found.text
    assert found.json()['key'] == key

    cli.ok('accelerator', 'device', 'attribute', 'delete', attribute)
    assert _api(target, 'GET',
                '/attributes/%s' % attribute).status_code == 404


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


def test_limit_list_shows_the_usage_of_the_project(cli, target, profile):
    """The embedded default limits nothing: the class in use is listed as
    unlimited, with the units the project's ARQs hold."""
    made = _api(target, 'POST', '/accelerator_requests',
                json={'device_profile_name': profile['name']})
    assert made.status_code == 201, made.text
    listed = cli.json('accelerator', 'limit', 'list')
    assert listed == [{'Resource': 'class:FPGA', 'Resource Class': 'FPGA',
                       'Limit': -1, 'Usage': 1}]
    table = cli.ok('accelerator', 'limit', 'list', '--project', PROJECT)
    assert 'unlimited' in table and 'class:FPGA' in table
    assert cli.json('accelerator', 'limit', 'list', '--project',
                    'p-%s' % uuid.uuid4().hex[:8]) == []


def test_conductor_list_shows_the_api_answer(cli, target):
    """Every conductor, up, as GET /v2/conductors (2.11) shows it."""
    answer = _api(target, 'GET', '/conductors',
                  headers={'OpenStack-API-Version': 'accelerator 2.11'})
    assert answer.status_code == 200, answer.text
    conductors = answer.json()['conductors']
    assert conductors and {c['status'] for c in conductors} == {'up'}
    listed = cli.json('accelerator', 'conductor', 'list')
    # NOTE(tests): a heartbeat between the two reads moves the time and
    # the skew, so those are only checked for their form.
    assert [(row['Host'], row['Status'], row['Version'], row['RPC Version'])
            for row in listed] == [
        (c['host'], c['status'], c['version'], c['rpc_version'])
        for c in conductors]
    for row in listed:
        assert row['Last Heartbeat'].endswith('+00:00'), row
        # NOTE(tests): one machine, one clock: the skew is a round trip's.
        skew = row['Clock Skew (s)']
        assert skew is None or abs(skew) < 5, row
    table = cli.ok('accelerator', 'conductor', 'list')
    assert 'Clock Skew (s)' in table and conductors[0]['host'] in table


def test_device_profile_explain_shows_the_api_answer(cli, target, profile):
    """Every deployable of every group, as the API judges it."""
    answer = _api(target, 'GET', '/device_profiles/%s/candidates'
                  % profile['name'],
                  headers={'OpenStack-API-Version': 'accelerator 2.8'})
    assert answer.status_code == 200, answer.text
    groups = answer.json()['groups']
    expected = [{'Group': group['group'],
                 'Deployable': found['deployable_name'],
                 'Host': found['hostname'],
                 'Resource Class': found['resource_class'],
                 'Schedulable': found['schedulable'],
                 'Reason': found['reason'] or '',
                 'Detail': found['detail'] or ''}
                for group in groups for found in group['candidates']]
    assert sorted(row['Deployable'] for row in expected) == sorted(
        deployable['name'] for deployable in target.deployables())
    assert cli.json('accelerator', 'device', 'profile', 'explain',
                    profile['name']) == expected
    assert cli.json('accelerator', 'device', 'profile', 'explain',
                    profile['uuid'], '--group', '0') == expected
    # NOTE(tests): an aggregate no provider is in: Placement offers
    # nothing, and what could serve says so.
    aggregate = str(uuid.uuid4())
    narrowed = cli.json('accelerator', 'device', 'profile', 'explain',
                        profile['name'], '--member-of', aggregate)
    assert [row['Schedulable'] for row in narrowed] == [False] * len(
        expected)
    assert [row['Reason'] for row, before in zip(narrowed, expected,
                                                 strict=True)
            if before['Schedulable']] == [
        'not_offered' for before in expected if before['Schedulable']]
    table = cli.ok('accelerator', 'device', 'profile', 'explain',
                   profile['name'])
    assert 'Schedulable' in table and 'Reason' in table
    missing = cli.run('accelerator', 'device', 'profile', 'explain',
                      'no-such-profile')
    assert missing.returncode != 0
    assert 'no-such-profile' in missing.stderr


def test_arq_bind_unbind_delete(cli, target, profile, nova):
    # NOTE(tests): a bind takes a ready device only.
    target.activate_devices()
    # NOTE(tests): made as Nova makes it, so that binding is tested apart
    # from the CLI's create.
    made = _api(target, 'POST', '/accelerator_requests',
                json={'device_profile_name': profile['name']})
    assert made.status_code == 201, made.text
    (arq,) = [a['uuid'] for a in made.json()['arqs']]
    (deployable,) = target.deployables()
    rp_uuid = deployable['rp_uuid']
    instance = str(uuid.uuid4())
    nova.own(instance, PROJECT)

    bind = ['accelerator', 'arq', 'bind', arq, target.host, instance,
            rp_uuid]
    env = None
    if cli.flavour == 'legacy':
        # NOTE(tests): cyborgclient requires a project but never sends it.
        bind.append(PROJECT)
    else:
        # NOTE(tests): the in-tree client asks Nova for the server first;
        # without a catalog its endpoint is given like the CLI's own.
        env = {'OS_COMPUTE_ENDPOINT_OVERRIDE': nova.url}
    started = cli.json(*bind, env=env)
    assert started['uuid'] == arq
    assert started['state'] in ('BindStarted', 'Bound')
    assert (started['hostname'], started['device_rp_uuid'],
            started['instance_uuid']) == (target.host, rp_uuid, instance)

    processes.wait_for(lambda: _arq_state(target, arq) in ('Bound',
                                                           'BindFailed'),
                       TIMEOUT, what='the ARQ to be resolved')
    bound = cli.json('accelerator', 'arq', 'show', arq)
    assert (bound['state'], bound['attach_handle_type'],
            bound['attach_handle_info']) == ('Bound', 'TEST_PCI', PCI)
    assert (bound['hostname'], bound['device_rp_uuid'],
            bound['instance_uuid']) == (target.host, rp_uuid, instance)
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
