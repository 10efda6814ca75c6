"""cyborg-dbsync as an operator runs it: a real process and a config file."""

import os
import shutil
import subprocess
import sys

import pytest

from cyborg.db import migration


def _dbsync(config_file, *args):
    # NOTE(tests): the console script installed next to this interpreter,
    # not whichever one PATH would find first.
    script = shutil.which('cyborg-dbsync',
                          path=os.path.dirname(sys.executable))
    assert script, 'cyborg-dbsync is not installed (pip install -e .)'
    return subprocess.run([script, '--config-file', str(config_file), *args],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def _config(tmp_path, connection):
    path = tmp_path / 'cyborg.conf'
    path.write_text('[DEFAULT]\nstate_path = %s\n\n[database]\n'
                    'connection = %s\n' % (tmp_path, connection))
    return path


def _ok(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _one_error_line(result):
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert 'Traceback' not in output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def sqlite_config(tmp_path):
    return _config(tmp_path, 'sqlite:///%s' % (tmp_path / 'cyborg.sqlite'))


def test_upgrade_version_downgrade(sqlite_config):
    assert _ok(_dbsync(sqlite_config, 'version')).strip() == 'None'
    _ok(_dbsync(sqlite_config, 'upgrade'))
    assert _ok(_dbsync(sqlite_config, 'version')).strip() == migration.head()
    _ok(_dbsync(sqlite_config, 'downgrade', '--revision', 'base'))
    assert _ok(_dbsync(sqlite_config, 'version')).strip() == 'None'


def test_upgrade_to_a_named_revision(sqlite_config):
    head = migration.head()
    _ok(_dbsync(sqlite_config, 'upgrade', '--revision', head))
    assert _ok(_dbsync(sqlite_config, 'version')).strip() == head


@pytest.mark.parametrize('connection', [
    'mysql+pymysql://root@127.0.0.1:1/x',
    'postgresql+psycopg2://nobody@127.0.0.1:1/x',
    'sqlite:////nonexistent/dir/cyborg.sqlite',
])
def test_unreachable_database(tmp_path, connection):
    result = _dbsync(_config(tmp_path, connection), 'upgrade')
    assert '[database] connection' in _one_error_line(result)


def test_unknown_revision(sqlite_config):
    result = _dbsync(sqlite_config, 'downgrade', '--revision', 'nosuchrev')
    assert 'nosuchrev' in _one_error_line(result)


def test_downgrade_needs_a_revision(sqlite_config):
    result = _dbsync(sqlite_config, 'downgrade')
    assert result.returncode == 2
    assert '--revision' in result.stderr
