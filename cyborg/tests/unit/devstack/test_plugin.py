"""The DevStack plugin, run by bash against stand-ins of DevStack."""

import os
import shutil
import subprocess

import pytest
import yaml

from cyborg.tests import install_guide
from cyborg.tests.unit.devstack import conf_check

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_DEVSTACK = os.path.join(HERE, 'fake_devstack.sh')
SERVICE_HOST = '192.0.2.10'
CONTROLLER = 'key,mysql,rabbit,n-api,n-cond,n-cpu,placement-api,tempest'
COMPUTE = 'n-cpu,placement-client,cyborg-agent'
STACK = ('stack install', 'stack post-config', 'stack extra',
         'stack test-config')
UWSGI_URL = 'http://%s/accelerator' % SERVICE_HOST

# NOTE(devstack): nounset turns a variable the plugin reads but DevStack
# does not define (a typo, most likely) into a failure.
_SCRIPT = '''
set -o errexit -o nounset -o pipefail
source "$FAKE_DEVSTACK"
source "$CYBORG_DIR/devstack/settings"
for phase in "$@"; do
    source "$CYBORG_DIR/devstack/plugin.sh" $phase
done
'''

_FAKE_DBSYNC = '''#!/bin/sh
printf '%s' "$(basename "$0")" >>"$FAKE_CALLS"
for arg; do printf '\\t%s' "$arg" >>"$FAKE_CALLS"; done
echo >>"$FAKE_CALLS"
'''

pytestmark = pytest.mark.skipif(shutil.which('bash') is None,
                                reason='the plugin is a bash script')


class Stack:
    """One node's run of the plugin, in a directory of its own."""

    def __init__(self, root, services, **variables):
        self.root = str(root)
        self.bin = os.path.join(self.root, 'bin')
        self.calls_log = os.path.join(self.root, 'calls')
        self.conf_dir = os.path.join(self.root, 'etc', 'cyborg')
        self.conf = os.path.join(self.conf_dir, 'cyborg.conf')
        self.uwsgi_conf = os.path.join(self.conf_dir,
                                       'cyborg-api-uwsgi.ini')
        self.nova_conf = os.path.join(self.root, 'etc', 'nova', 'nova.conf')
        self.tempest_conf = os.path.join(self.root, 'tempest.conf')
        self.env = self._env(services, variables)
        self._make_bin()
        os.makedirs(os.path.dirname(self.nova_conf))

    def _env(self, services, variables):
        env = {
            'PATH': self.bin + os.pathsep + os.environ.get('PATH', ''),
            'FAKE_DEVSTACK': FAKE_DEVSTACK, 'FAKE_CALLS': self.calls_log,
            'FAKE_ROOT': self.root, 'FAKE_BIN': self.bin,
            'CYBORG_DIR': conf_check.ROOT, 'CYBORG_CONF_DIR': self.conf_dir,
            'DEST': os.path.join(self.root, 'opt'),
            'DATA_DIR': os.path.join(self.root, 'data'),
            'STACK_USER': str(os.getuid()),
            'ENABLED_SERVICES': services,
            'SERVICE_HOST': SERVICE_HOST, 'SERVICE_PROTOCOL': 'http',
            'SERVICE_LISTEN_ADDRESS': '0.0.0.0', 'SERVICE_TIMEOUT': '60',
            'SERVICE_PASSWORD': 'service-secret',
            'SERVICE_DOMAIN_NAME': 'Default',
            'SERVICE_PROJECT_NAME': 'service', 'REGION_NAME': 'RegionOne',
            'KEYSTONE_SERVICE_URI': 'http://%s/identity' % SERVICE_HOST,
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'MEMCACHE_SERVERS': 'localhost:11211',
            'SSL_BUNDLE_FILE': os.path.join(self.root, 'ca-bundle.pem'),
            'NOVA_CONF': self.nova_conf, 'NOVA_USE_SERVICE_TOKEN': 'True',
            'TEMPEST_CONFIG': self.tempest_conf,
        }
        env.update(variables)
        return env

    def _make_bin(self):
        os.makedirs(self.bin)
        for name, text in (('cyborg-dbsync', _FAKE_DBSYNC),
                           ('uwsgi', '#!/bin/sh\n')):
            path = os.path.join(self.bin, name)
            with open(path, 'w') as script:
                script.write(text)
            os.chmod(path, 0o755)

    def run(self, *phases):
        result = subprocess.run(
            ['bash', '-c', _SCRIPT, 'plugin'] + list(phases),
            env=self.env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return result

    def calls(self, name=None):
        """[name, arg...] of each recorded call, in order."""
        if not os.path.exists(self.calls_log):
            return []
        with open(self.calls_log) as log:
            calls = [line.rstrip('\n').split('\t') for line in log]
        return [call for call in calls if name in (None, call[0])]

    def ini(self, path=None):
        return conf_check.read_ini(path or self.conf)


@pytest.fixture(scope='module')
def allowed():
    return conf_check.cyborg_allowed_options()


@pytest.fixture(scope='module')
def controller(tmp_path_factory):
    """A single node with every Cyborg service, stacked once."""
    stack = Stack(tmp_path_factory.mktemp('controller'), CONTROLLER)
    stack.run(*STACK)
    return stack


def _assert_valid(stack, allowed):
    assert conf_check.unknown_options(stack.conf, allowed) == []
    assert conf_check.bad_values(stack.conf, allowed) == []


# The checker itself.

def _write(tmp_path, text):
    path = tmp_path / 'cyborg.conf'
    path.write_text(text)
    return str(path)


def test_checker_catches_misspelled_option(tmp_path, allowed):
    path = _write(tmp_path, '[DEFAULT]\ntransport_url = rabbit://h//\n'
                            '[agent]\nenable_drivers = fake_driver\n')
    assert conf_check.unknown_options(path, allowed) == [
        'agent.enable_drivers']


def test_checker_catches_misspelled_group(tmp_path, allowed):
    path = _write(tmp_path, '[keystone_auth_token]\nauth_type = password\n')
    assert conf_check.unknown_options(path, allowed) == [
        '[keystone_auth_token] (unknown group)']


def test_checker_catches_bad_value(tmp_path, allowed):
    path = _write(tmp_path, '[api]\nport = six-six\n[DEFAULT]\ndebug = 1\n')
    assert [problem.split(':')[0] for problem in
            conf_check.bad_values(path, allowed)] == ['api.port']


def test_checker_knows_library_and_runtime_options(tmp_path, allowed):
    path = _write(tmp_path, '[keystone_authtoken]\nproject_name = service\n'
                            '[placement]\nvalid_interfaces = internal\n'
                            '[oslo_messaging_rabbit]\nrabbit_qos_prefetch_'
                            'count = 5\n[cyborg_sys_admin]\n'
                            'helper_command = sudo privsep-helper\n')
    assert conf_check.unknown_options(path, allowed) == []


# A single node with every service.

def test_settings_enable_every_service(controller):
    started = [call[1] for call in controller.calls('run_process')]
    assert started == ['cyborg-cond', 'cyborg-api', 'cyborg-agent']


def test_cyborg_conf_sets_only_registered_options(controller, allowed):
    _assert_valid(controller, allowed)


def test_cyborg_conf_values(controller):
    ini = controller.ini()
    assert ini['DEFAULT']['transport_url'] == (
        'rabbit://stackrabbit:secret@%s:5672/' % SERVICE_HOST)
    assert ini['DEFAULT']['debug'] == 'True'
    assert ini['DEFAULT']['state_path'] == os.path.join(
        controller.root, 'data', 'cyborg')
    assert ini['database']['connection'] == (
        'mysql+pymysql://root:secret@%s/cyborg?charset=utf8' % SERVICE_HOST)
    assert ini['agent']['enabled_drivers'] == 'fake_driver'
    assert ini['conductor']['auto_activate_new_devices'] == 'True'
    assert ini['api']['public_endpoint'] == UWSGI_URL
    # the service token is asked for by the policy's default
    assert 'require_service_token' not in ini['api']
    assert 'policy_file' not in ini.get('oslo_policy', {})
    assert ini['keystone_authtoken']['username'] == 'cyborg'
    assert ini['keystone_authtoken']['service_type'] == 'accelerator'


@pytest.mark.parametrize('group', ['placement', 'nova', 'glance'])
def test_service_clients_use_cyborg_user(controller, group):
    section = controller.ini()[group]
    assert section['auth_type'] == 'password'
    assert section['username'] == 'cyborg'
    assert section['password'] == 'service-secret'
    assert section['region_name'] == 'RegionOne'


def test_accelerator_service_and_endpoint(controller):
    assert controller.calls('create_service_user') == [
        ['create_service_user', 'cyborg', 'admin']]
    assert controller.calls('get_or_add_user_project_role') == [
        ['get_or_add_user_project_role', 'service', 'cyborg', 'service',
         'Default', 'Default']]
    # The roles the install guide gives the user.
    assert install_guide.roles()['cyborg'] == {'admin', 'service'}
    assert controller.calls('get_or_create_service') == [
        ['get_or_create_service', 'cyborg', 'accelerator',
         'Accelerator Service']]
    # As the install guide: public, admin and internal (DevStack's order),
    # each ending with the API's version.
    url = UWSGI_URL + install_guide.endpoint_path()
    assert sorted(install_guide.accelerator_endpoints()) == [
        'admin', 'internal', 'public']
    assert controller.calls('get_or_create_endpoint') == [
        ['get_or_create_endpoint', 'accelerator', 'RegionOne', url, url,
         url]]


def test_database_created_then_synced(controller):
    names = [call[0] for call in controller.calls()]
    assert names.index('recreate_database') < names.index('cyborg-dbsync')
    assert controller.calls('recreate_database') == [
        ['recreate_database', 'cyborg']]
    assert controller.calls('cyborg-dbsync') == [
        ['cyborg-dbsync', '--config-file', controller.conf, 'upgrade']]


def test_api_under_uwsgi(controller):
    assert controller.calls('write_uwsgi_config') == [
        ['write_uwsgi_config', controller.uwsgi_conf,
         'cyborg.wsgi.api:application', '/accelerator', '', 'cyborg-api']]
    uwsgi = controller.ini(controller.uwsgi_conf)['uwsgi']
    assert uwsgi['module'] == 'cyborg.wsgi.api:application'
    assert uwsgi['env'] == 'CYBORG_CONFIG_FILE=' + controller.conf
    [api] = [call for call in controller.calls('run_process')
             if call[1] == 'cyborg-api']
    assert api[2].split() == [
        os.path.join(controller.bin, 'uwsgi'), '--procname-prefix',
        'cyborg-api', '--ini', controller.uwsgi_conf]


def test_conductor_and_agent_started(controller):
    commands = {call[1]: call[2] for call in controller.calls('run_process')}
    for service, command in (('cyborg-cond', 'cyborg-conductor'),
                             ('cyborg-agent', 'cyborg-agent')):
        assert commands[service] == '%s --config-file %s' % (
            os.path.join(controller.bin, command), controller.conf)


def test_installed_from_the_tree(controller):
    assert controller.calls('setup_develop') == [
        ['setup_develop', conf_check.ROOT]]


def test_nova_cyborg_group(controller):
    # The install guide's, which the tests with the real Nova run.
    assert controller.ini(controller.nova_conf)['cyborg'] == \
        install_guide.nova_conf()['cyborg']
    assert conf_check.unknown_options(
        controller.nova_conf, conf_check.nova_cyborg_allowed_options(),
        only={'cyborg'}) == []


def test_tempest_knows_cyborg(controller):
    tempest = controller.ini(controller.tempest_conf)
    assert tempest['service_available'] == {'cyborg': 'True'}
    assert tempest['cyborg_policy'] == {'enforce_new_defaults': 'False'}


def test_unstack_and_clean(tmp_path):
    stack = Stack(tmp_path, CONTROLLER)
    stack.run(*STACK)
    stack.run('unstack', 'clean')
    assert [call[1] for call in stack.calls('stop_process')] == [
        'cyborg-api', 'cyborg-cond', 'cyborg-agent']
    assert stack.calls('remove_uwsgi_config') == [
        ['remove_uwsgi_config', stack.uwsgi_conf, 'cyborg-api']]
    assert not os.path.exists(stack.conf_dir)


# Other nodes and choices.

def test_compute_node_runs_the_agent_alone(tmp_path, allowed):
    stack = Stack(tmp_path, COMPUTE)
    stack.run(*STACK)
    _assert_valid(stack, allowed)
    ini = stack.ini()
    assert {'database', 'keystone_authtoken', 'nova'}.isdisjoint(ini)
    assert ini['placement']['username'] == 'cyborg'
    assert [call[1] for call in stack.calls('run_process')] == [
        'cyborg-agent']
    for name in ('create_service_user', 'get_or_create_endpoint',
                 'recreate_database', 'cyborg-dbsync', 'write_uwsgi_config'):
        assert stack.calls(name) == [], name


def test_api_without_uwsgi(tmp_path, allowed):
    stack = Stack(tmp_path, CONTROLLER, CYBORG_USE_UWSGI='False')
    stack.run(*STACK)
    _assert_valid(stack, allowed)
    url = 'http://%s:6666' % SERVICE_HOST
    assert stack.ini()['api']['port'] == '6666'
    assert stack.ini()['api']['public_endpoint'] == url
    endpoint = url + '/v2'
    assert stack.calls('get_or_create_endpoint') == [
        ['get_or_create_endpoint', 'accelerator', 'RegionOne', endpoint,
         endpoint, endpoint]]
    [api] = [call for call in stack.calls('run_process')
             if call[1] == 'cyborg-api']
    assert api[2] == '%s --config-file %s' % (
        os.path.join(stack.bin, 'cyborg-api'), stack.conf)
    assert stack.calls('write_uwsgi_config') == []
    assert stack.calls('install_apache_uwsgi') == []


@pytest.mark.parametrize('variables, expected', [
    ({'NOVA_USE_SERVICE_TOKEN': 'False'}, 'False'),
    ({'NOVA_USE_SERVICE_TOKEN': 'False',
      'CYBORG_REQUIRE_SERVICE_TOKEN': 'True'}, 'True'),
    ({'NOVA_USE_SERVICE_TOKEN': 'True',
      'CYBORG_REQUIRE_SERVICE_TOKEN': 'False'}, 'False'),
])
def test_service_token_follows_nova(tmp_path, variables, expected):
    stack = Stack(tmp_path, CONTROLLER, **variables)
    stack.run('stack post-config')
    ini = stack.ini()
    assert 'require_service_token' not in ini['api']
    policy_file = os.path.join(stack.conf_dir, 'policy.yaml')
    if expected == 'True':
        assert not os.path.exists(policy_file)
        assert 'policy_file' not in ini.get('oslo_policy', {})
        return
    assert ini['oslo_policy']['policy_file'] == policy_file
    with open(policy_file) as stream:
        assert yaml.safe_load(stream) == {'cyborg:arq:service_token': '@'}


@pytest.mark.parametrize('variables', [
    {'ENFORCE_SCOPE': 'True'}, {'CYBORG_ENFORCE_NEW_DEFAULTS': 'yes'}])
def test_new_policy_defaults(tmp_path, allowed, variables):
    stack = Stack(tmp_path, CONTROLLER, **variables)
    stack.run('stack post-config', 'stack test-config')
    _assert_valid(stack, allowed)
    assert stack.ini()['oslo_policy'] == {'enforce_new_defaults': 'True'}
    assert stack.ini(stack.tempest_conf)['cyborg_policy'] == {
        'enforce_new_defaults': 'True'}
