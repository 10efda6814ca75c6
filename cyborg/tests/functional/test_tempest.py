"""The real cyborg-tempest-plugin's API tests, against Keystone and Cyborg."""

import configparser
import csv
import io
import os
import subprocess
import time

import pytest

from cyborg.tests import deployments
from cyborg.tests import keystone as keystone_process

pytestmark = pytest.mark.functional

HERE = os.path.dirname(os.path.abspath(__file__))
# NOTE(tempest): each line says which upstream defect the test asserts.
EXCLUDE_LIST = os.path.join(HERE, 'tempest_exclude.txt')
REGEX = r'^cyborg_tempest_plugin\.tests\.api\.'
CONCURRENCY = 2
RUN_TIMEOUT = 1200
TIMEOUT = 120
# What of tempest's report an assertion message carries.
REPORT_CHARS = 60000


@pytest.fixture(scope='module')
def tempest():
    """The tempest virtualenv, with cyborg-tempest-plugin."""
    began = time.monotonic()
    venv = keystone_process.build_venvs('tempest')['tempest']
    print('tempest virtualenv: %.1fs' % (time.monotonic() - began))
    return venv


@pytest.fixture(scope='module')
def target(keystone, tmp_path_factory):
    with deployments.all_in_one_behind_keystone(
            tmp_path_factory.mktemp('aio-tempest'), keystone) as found:
        yield found


def _tempest_conf(keystone):
    """The sections of etc/tempest.conf besides those of ``tempest init``.
    """
    return {
        # NOTE(tempest): logs/tempest.log then has every request and
        # response, bodies included.
        'DEFAULT': {'debug': 'true'},
        'auth': {
            'admin_username': keystone_process.ADMIN,
            'admin_password': keystone_process.ADMIN_PASSWORD,
            'admin_project_name': keystone_process.ADMIN_PROJECT,
            'admin_domain_name': 'Default',
            # NOTE(tempest): each test class gets a project of its own and
            # a user of each persona it asks for, made with the admin's
            # credentials.
            'use_dynamic_credentials': 'true',
            'create_isolated_networks': 'false',
        },
        'identity': {
            'uri_v3': keystone.url + '/v3',
            'auth_version': 'v3',
            'region': keystone_process.REGION,
            'v3_endpoint_type': 'public',
        },
        'identity-feature-enabled': {'api_v2': 'false', 'api_v3': 'true'},
        'service_available': dict(
            {name: 'false' for name in ('nova', 'glance', 'neutron',
                                        'cinder', 'swift')},
            cyborg='true'),
        # NOTE(tempest): oslo.policy 6's default, which Cyborg keeps: the
        # plugin then uses the least persona each rule allows, and runs its
        # SRBAC tests.
        'cyborg_policy': {'enforce_new_defaults': 'true'},
        'validation': {'run_validation': 'false'},
    }


def _write_conf(path, sections):
    conf = configparser.ConfigParser(interpolation=None)
    conf.optionxform = str
    conf.read(path)
    for section, options in sections.items():
        if section != 'DEFAULT' and not conf.has_section(section):
            conf.add_section(section)
        for key, value in options.items():
            conf.set(section, key, value)
    with open(path, 'w') as out:
        conf.write(out)


class Tempest:
    """The commands of the tempest virtualenv, in a workspace under
    ``home``, which is also their HOME (tempest keeps files there)."""

    def __init__(self, venv, home):
        self.bin = os.path.join(venv, 'bin')
        self.workspace = os.path.join(str(home), 'workspace')
        # NOTE(tempest): a developer's OS_* variables must not point the
        # run elsewhere, and stestr runs the tests with $PYTHON when set.
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith('OS_') and key != 'PYTHON'}
        self.env.update(HOME=str(home),
                        PATH=self.bin + os.pathsep + os.environ['PATH'])

    def run(self, *command, timeout=TIMEOUT, cwd=None):
        return subprocess.run(
            [os.path.join(self.bin, command[0]), *command[1:]],
            cwd=cwd or self.workspace, env=self.env, capture_output=True,
            text=True, timeout=timeout, check=False)

    def init(self, sections):
        done = self.run('tempest', 'init', '--workspace-path', os.path.join(
            self.env['HOME'], 'workspace.yaml'), self.workspace,
            cwd=self.env['HOME'])
        assert done.returncode == 0, done.stdout + done.stderr
        _write_conf(os.path.join(self.workspace, 'etc', 'tempest.conf'),
                    sections)

    def _pipe(self, command, data=None):
        """The stdout, as bytes, of ``command`` given ``data``."""
        return subprocess.run(
            [os.path.join(self.bin, command[0]), *command[1:]], input=data,
            cwd=self.workspace, env=self.env, capture_output=True,
            check=False, timeout=TIMEOUT).stdout

    def _last(self):
        """The subunit stream of the last run."""
        return self._pipe(['stestr', 'last', '--subunit'])

    def results(self):
        """{test id without its tags: subunit's status} of the last run."""
        rows = self._pipe(['subunit2csv', '--no-passthrough'], self._last())
        return {row['test'].split('[')[0]: row['status']
                for row in csv.DictReader(io.StringIO(rows.decode()))}

    def failures(self):
        """The failed tests of the last run with their tracebacks and what
        they logged (every request and response)."""
        failed = self._pipe(['subunit-filter', '--no-passthrough',
                             '--only-genuine-failures'], self._last())
        done = subprocess.run(
            [os.path.join(self.bin, 'subunit2pyunit'), '--no-passthrough'],
            input=failed, capture_output=True, check=False, timeout=TIMEOUT)
        return (done.stdout + done.stderr).decode(errors='replace')


def test_cyborg_tempest_plugin_api(keystone, target, tempest, tmp_path):
    runner = Tempest(tempest, tmp_path)
    runner.init(_tempest_conf(keystone))
    began = time.monotonic()
    ran = runner.run('tempest', 'run', '--regex', REGEX, '--exclude-list',
                     EXCLUDE_LIST, '--concurrency', str(CONCURRENCY),
                     timeout=RUN_TIMEOUT)
    # NOTE(tempest): pytest shows what a failed test printed: every
    # test's result, and how long each phase took.
    print('keystone: virtualenv %(venv).1fs, start %(start).1fs'
          % keystone.timings)
    print('tempest run: %.1fs' % (time.monotonic() - began))
    print(ran.stdout + ran.stderr)
    totals = ran.stdout[ran.stdout.rfind('\nTotals'):]
    assert ran.returncode == 0, (
        'tempest run exited %d (its log: %s)%s\n%s' % (
            ran.returncode, os.path.join(runner.workspace, 'logs',
                                         'tempest.log'),
            totals, runner.failures()[-REPORT_CHARS:]))
    results = runner.results()
    # NOTE(tempest): a wrong tempest.conf skips whole classes (no cyborg,
    # no SRBAC); here nothing is skipped: the exclude list's tests are not
    # run at all.
    assert results and set(results.values()) == {'success'}, results
