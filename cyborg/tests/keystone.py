"""A real Keystone as a process, with the projects and users tests need."""

import os
import subprocess
import sys

from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
import requests

from cyborg.tests import install_guide
from cyborg.tests import processes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VENVS = os.path.join(REPO, '.tempest-venvs')
SERVER = os.path.join(REPO, 'cyborg', 'tests', 'keystone_server.py')
# NOTE(keystone): a first build downloads and installs Keystone and tempest
# with their dependencies (a minute and a half on a quiet machine).
BUILD_TIMEOUT = 1200
TIMEOUT = 60
REGION = 'RegionOne'
DOMAIN = 'default'
ADMIN = 'admin'
ADMIN_PROJECT = 'admin'
ADMIN_PASSWORD = 'keystone-admin-secret'
PASSWORD = 'cyborg-tests-secret'
SERVICE_PROJECT = 'service'
ROLES = ('reader', 'member', 'manager', 'admin', 'service')
# (prior, implied): a token carries every role its roles imply.
IMPLIED = (('admin', 'manager'), ('manager', 'member'), ('member', 'reader'))
PROJECTS = ('p1', 'p2')
PERSONAS = ('reader', 'member', 'manager')
# {user: (project, roles on it)}; ADMIN comes from bootstrap. nova is Nova's
# service user, whose token Nova sends as X-Service-Token; cyborg is the one
# keystonemiddleware validates tokens with (both with the roles the install
# guide gives them); glance and placement are those services' own, for the
# tests that run the real Nova.
_GUIDE_ROLES = install_guide.roles()
USERS = dict({'%s-%s' % (project, persona): (project, (persona,))
              for project in PROJECTS for persona in PERSONAS},
             nova=(SERVICE_PROJECT, tuple(sorted(_GUIDE_ROLES['nova']))),
             cyborg=(SERVICE_PROJECT, tuple(sorted(_GUIDE_ROLES['cyborg']))),
             glance=(SERVICE_PROJECT, ('service',)),
             placement=(SERVICE_PROJECT, ('service',)))


def build_venvs(*names):
    """{name: its virtualenv}, built by tools/tempest-venvs.sh if needed."""
    built = subprocess.run(
        ['bash', os.path.join(REPO, 'tools', 'tempest-venvs.sh'), *names],
        env=dict(os.environ, PYTHON=sys.executable), capture_output=True,
        text=True, timeout=BUILD_TIMEOUT, check=False)
    assert built.returncode == 0, 'tools/tempest-venvs.sh exited %d:\n%s%s' % (
        built.returncode, built.stdout, built.stderr[-20000:])
    return {name: os.path.join(VENVS, name) for name in names}


class Keystone:
    """Keystone 30 on SQLite, served on a free port of 127.0.0.1.

    Its fernet and credential keys, database and log live in ``state_dir``.
    start() bootstraps it (the ``admin`` user of the ``admin`` project, with
    the admin role on the system too, RegionOne and the identity endpoints)
    and creates the roles, projects and users of USERS, whose ids are then
    in ``ids`` (``{'roles'|'projects'|'users': {name: id}}``).

    :param venv: the virtualenv tools/tempest-venvs.sh built for Keystone.
    """

    def __init__(self, venv, state_dir):
        self.venv = venv
        self.dir = str(state_dir)
        self.port = processes.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.proc = None
        self.ids = {}
        self._sessions = {}

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    # --- The process --------------------------------------------------------

    def _config(self):
        keys = {}
        for name in ('fernet', 'credential'):
            keys[name] = os.path.join(self.dir, '%s-keys' % name)
            os.makedirs(keys[name], mode=0o700, exist_ok=True)
        path = os.path.join(self.dir, 'keystone.conf')
        return processes.write_config(path, {
            'DEFAULT': {'use_stderr': 'true'},
            'database': {'connection': 'sqlite:///%s' % os.path.join(
                self.dir, 'keystone.sqlite')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {'key_repository': keys['fernet']},
            'fernet_receipts': {'key_repository': keys['fernet']},
            'credential': {'key_repository': keys['credential']},
            # NOTE(keystone): bcrypt's fewest rounds; every user created and
            # every token issued hashes a password.
            'identity': {'password_hash_rounds': 4},
            # NOTE(keystone): uncached, checking a token reads the database
            # some forty times; one process, so its own memory serves.
            'cache': {'enabled': 'true', 'backend': 'oslo_cache.dict'},
        })

    def _manage(self, conf, *args):
        """keystone-manage ``args``, started; its Popen."""
        return subprocess.Popen(
            [os.path.join(self.venv, 'bin', 'keystone-manage'),
             '--config-file', conf, *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def _wait_managed(self, *started):
        for proc in started:
            out, _err = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 0, '%s exited %d:\n%s' % (
                ' '.join(proc.args[3:]), proc.returncode, out[-8000:])

    def start(self):
        conf = self._config()
        owner = ['--keystone-user', str(os.geteuid()),
                 '--keystone-group', str(os.getegid())]
        # NOTE(keystone): each keystone-manage spends seconds importing;
        # the keys do not need the schema, so they are made meanwhile.
        self._wait_managed(self._manage(conf, 'db_sync'),
                           self._manage(conf, 'fernet_setup', *owner),
                           self._manage(conf, 'credential_setup', *owner))
        self._wait_managed(self._manage(
            conf, 'bootstrap', '--bootstrap-username', ADMIN,
            '--bootstrap-password', ADMIN_PASSWORD,
            '--bootstrap-project-name', ADMIN_PROJECT,
            '--bootstrap-region-id', REGION,
            '--bootstrap-public-url', self.url,
            '--bootstrap-internal-url', self.url))
        self.proc = processes.Process('keystone', None, self.dir, command=[
            os.path.join(self.venv, 'bin', 'python'), SERVER,
            '--config-file', conf, '--port', str(self.port)])
        try:
            processes.wait_for(self._answers, TIMEOUT, interval=0.1,
                               what='Keystone to answer')
            self._populate()
        except BaseException:
            # NOTE(keystone): its exit code would hide why it failed.
            self.proc.stop()
            self.proc = None
            raise
        return self

    def _answers(self):
        if not self.proc.alive():
            raise AssertionError('Keystone exited %s:\n%s' % (
                self.proc.proc.returncode, self.proc.log()[-8000:]))
        return requests.get(self.url + '/v3', timeout=5).status_code == 200

    def stop(self):
        """Stop Keystone, which must exit 0."""
        if self.proc is None:
            return
        for sess in self._sessions.values():
            sess.session.close()
        self._sessions.clear()
        code, self.proc = self.proc.stop(), None
        assert code == 0, 'Keystone exited %d' % code

    def log(self):
        return self.proc.log() if self.proc else ''

    # --- Tokens -------------------------------------------------------------

    def session(self, user, system=False):
        """A keystoneauth1 session as ``user`` (a name of USERS or ADMIN),
        scoped to the user's project, or to the system (``system``). It
        keeps its token until the token is about to expire."""
        key = (user, system)
        if key not in self._sessions:
            if system:
                scope = {'system_scope': 'all'}
            else:
                scope = {'project_name': USERS[user][0] if user in USERS
                         else ADMIN_PROJECT,
                         'project_domain_id': DOMAIN}
            auth = v3.Password(
                auth_url=self.url, username=user, user_domain_id=DOMAIN,
                password=ADMIN_PASSWORD if user == ADMIN else PASSWORD,
                **scope)
            self._sessions[key] = ks_session.Session(auth=auth)
        return self._sessions[key]

    def token(self, user):
        """A project-scoped token of ``user``."""
        return self.session(user).get_token()

    def admin_token(self):
        """A token of ``admin`` on the ``admin`` project."""
        return self.token(ADMIN)

    def system_admin_token(self):
        """A system-scoped token of ``admin``."""
        return self.session(ADMIN, system=True).get_token()

    # --- The identity API ---------------------------------------------------

    def api(self, method, path, body=None):
        """Call the identity API as the admin; the response's JSON or None.
        """
        resp = self.session(ADMIN).request(
            self.url + '/v3' + path, method, json=body, raise_exc=True)
        return resp.json() if resp.content else None

    def _create(self, kind, **fields):
        return self.api('POST', '/%ss' % kind, {kind: fields})[kind]['id']

    def _populate(self):
        roles = {role['name']: role['id']
                 for role in self.api('GET', '/roles')['roles']}
        for name in ROLES:
            if name not in roles:
                roles[name] = self._create('role', name=name)
        implied = {(rule['prior_role']['id'], implied['id'])
                   for rule in self.api('GET', '/role_inferences')[
                       'role_inferences']
                   for implied in rule['implies']}
        # NOTE(keystone): Keystone 30's bootstrap makes the whole chain;
        # an older one lacks manager, so the chain is made when missing.
        for prior, then in IMPLIED:
            if (roles[prior], roles[then]) not in implied:
                self.api('PUT', '/roles/%s/implies/%s' % (roles[prior],
                                                          roles[then]))
        projects = {name: self._create('project', name=name,
                                       domain_id=DOMAIN)
                    for name in PROJECTS + (SERVICE_PROJECT,)}
        users = {}
        for user, (project, granted) in USERS.items():
            users[user] = self._create(
                'user', name=user, password=PASSWORD, domain_id=DOMAIN,
                default_project_id=projects[project])
            for role in granted:
                self.api('PUT', '/projects/%s/users/%s/roles/%s' % (
                    projects[project], users[user], roles[role]))
        self.ids = {'roles': roles, 'projects': projects, 'users': users}

    def register_accelerator(self, url):
        """List Cyborg at ``url`` (without /v2) as the accelerator service
        in RegionOne, instead of any Cyborg listed before: an endpoint for
        each interface of the install guide, with its path (``/v2``)."""
        self.register('accelerator', 'cyborg',
                      url + install_guide.endpoint_path(),
                      interfaces=sorted(
                          install_guide.accelerator_endpoints()))

    def register(self, service_type, name, url, interfaces=('public',)):
        """List ``url`` as the endpoint of ``service_type`` in RegionOne
        for each of ``interfaces``, instead of any listed before."""
        for service in self.api('GET', '/services?type=%s' % service_type)[
                'services']:
            for endpoint in self.api('GET', '/endpoints?service_id=%s'
                                     % service['id'])['endpoints']:
                self.api('DELETE', '/endpoints/%s' % endpoint['id'])
            self.api('DELETE', '/services/%s' % service['id'])
        service = self._create('service', type=service_type, name=name)
        for interface in interfaces:
            self._create('endpoint', service_id=service, interface=interface,
                         region_id=REGION, url=url)
        # NOTE(keystone): a token carries the catalog of when it was issued.
        for sess in self._sessions.values():
            sess.invalidate()

    def auth_options(self, user='cyborg'):
        """A keystoneauth password section for a service user of USERS."""
        return {
            'auth_url': self.url,
            'auth_type': 'password',
            'username': user,
            'password': PASSWORD,
            'user_domain_id': DOMAIN,
            'project_name': USERS[user][0],
            'project_domain_id': DOMAIN,
            'region_name': REGION,
        }

    def authtoken_options(self, user='cyborg'):
        """A service's [keystone_authtoken], as its ``user``."""
        # NOTE(keystone): no memcached_servers: keystonemiddleware caches
        # the tokens it validated in the process.
        return dict(self.auth_options(user),
                    www_authenticate_uri=self.url,
                    service_token_roles='service',
                    service_token_roles_required='true')
