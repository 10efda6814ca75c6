"""A configuration error stops a service at start with one clear line."""

import pytest

from cyborg.tests import processes


def _one_error_line(result):
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Traceback' not in result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_agent_with_unknown_driver(tmp_path):
    conf = processes.write_config(tmp_path / 'agent.conf', {
        'DEFAULT': {'state_path': str(tmp_path), 'transport_url': 'fake:/'},
        'agent': {'enabled_drivers': 'fake_driver,no_such_driver'},
    })
    line = _one_error_line(processes.run('cyborg-agent', '--config-file',
                                         conf, timeout=60))
    assert '[agent] enabled_drivers' in line and 'no_such_driver' in line


@pytest.mark.parametrize('connection', [
    'mysql+pymysql://root@127.0.0.1:1/cyborg',
    'postgresql+psycopg2://nobody@127.0.0.1:1/cyborg',
    'sqlite:////nonexistent/dir/cyborg.sqlite',
])
def test_conductor_with_unreachable_database(tmp_path, connection):
    conf = processes.write_config(tmp_path / 'conductor.conf', {
        'DEFAULT': {'state_path': str(tmp_path), 'transport_url': 'fake:/'},
        'database': {'connection': connection},
    })
    line = _one_error_line(processes.run('cyborg-conductor', '--config-file',
                                         conf, timeout=60))
    assert '[database] connection' in line


def test_api_on_a_busy_port(tmp_path):
    import socket
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen()
        port = busy.getsockname()[1]
        conf = processes.write_config(tmp_path / 'api.conf', {
            'DEFAULT': {'state_path': str(tmp_path),
                        'transport_url': 'fake:/'},
            'api': {'port': port, 'auth_strategy': 'noauth'},
        })
        line = _one_error_line(processes.run('cyborg-api', '--config-file',
                                             conf, timeout=60))
    assert '[api]' in line and str(port) in line


def test_api_with_a_policy_file_that_does_not_parse(tmp_path):
    policy = tmp_path / 'policy.yaml'
    policy.write_text('"cyborg:device:get_all": "rule:admin_api"\n'
                      '"cyborg:device:get_one": [unclosed\n')
    conf = processes.write_config(tmp_path / 'api.conf', {
        'DEFAULT': {'state_path': str(tmp_path), 'transport_url': 'fake:/'},
        'api': {'auth_strategy': 'noauth'},
        'oslo_policy': {'policy_file': str(policy)},
    })
    line = _one_error_line(processes.run('cyborg-api', '--config-file',
                                         conf, timeout=60))
    assert 'Policy file %s cannot be parsed at line 3' % policy in line


def test_conductor_with_an_old_schema(tmp_path):
    conf = processes.write_config(tmp_path / 'conductor.conf', {
        'DEFAULT': {'state_path': str(tmp_path), 'transport_url': 'fake:/'},
    })
    line = _one_error_line(processes.run('cyborg-conductor', '--config-file',
                                         conf, timeout=60))
    assert '[database] connection' in line and 'cyborg-dbsync' in line
