"""What a running service tells systemd, and its Guru Meditation Reports.

Each test starts a real cyborg-all-in-one (self-contained: SQLite and
in-process messaging), which goes through the same cyborg.service.run as
cyborg-api, cyborg-conductor and cyborg-agent.
"""

import os
import re
import shutil
import signal
import socket
import tempfile
import time

import pytest
import requests

from cyborg.tests import processes

pytestmark = pytest.mark.functional

REPORT_TITLE = 'Guru Meditation'
_BANNER = 'Cyborg (embedded) is running.'
# NOTE(tests): the report ends with the configuration, group by group in
# alphabetical order; [placement] is the last group the all-in-one has.
_LAST_GROUP = re.compile(r'^placement: *$', re.MULTILINE)


def _section(title):
    return re.compile(r'^====\s+%s\s+====$' % title, re.MULTILINE)


def _whole_report(text):
    """``text`` once the report in it is written up to its end."""
    return text if _LAST_GROUP.search(text) else None


def _start(tmp_path, **sections):
    port = processes.free_port()
    conf = processes.write_config(tmp_path / 'aio.conf', dict({
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': 'aio'},
        'api': {'port': port},
        'embedded_placement': {'port': processes.free_port()},
    }, **sections))
    proc = processes.Process('cyborg-all-in-one', conf, tmp_path)
    return proc, 'http://127.0.0.1:%d' % port


def _api_answers(url):
    try:
        return requests.get(url + '/v2/devices', timeout=2).status_code == 200
    except (requests.ConnectionError, requests.Timeout):
        return False


def _wait_until_started(proc):
    # NOTE(tests): the banner comes after the report's trigger is set up,
    # whereas the API answers a little earlier: a SIGUSR2 sent in between
    # would still end the process.
    processes.wait_for(lambda: _BANNER in proc.log() or not proc.alive(),
                       60, what='the banner')
    assert proc.alive(), proc.log()


def _receive(sock, proc, timeout=60):
    """The next datagram on ``sock``, failing early if ``proc`` ends."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return sock.recv(512)
        except TimeoutError:
            assert proc.alive(), proc.log()
    raise AssertionError('nothing on NOTIFY_SOCKET after %ss' % timeout)


def _stop(proc):
    code = proc.stop(signal.SIGTERM)
    assert code == 0, proc.log()[-4000:]
    assert 'Traceback (most recent call last)' not in proc.log(), proc.log()


@pytest.fixture
def notify_socket(monkeypatch):
    """A bound datagram socket standing in for systemd's; the processes
    started afterwards inherit its path in NOTIFY_SOCKET."""
    # NOTE(tests): a short directory of its own, as unix socket paths are
    # limited to about 100 bytes and pytest's tmp_path can be longer.
    directory = tempfile.mkdtemp(prefix='cyborg-notify-')
    path = os.path.join(directory, 'notify')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    monkeypatch.setenv('NOTIFY_SOCKET', path)
    yield sock
    sock.close()
    shutil.rmtree(directory)


def test_ready_is_sent_once_the_api_listens(tmp_path, notify_socket):
    proc, url = _start(tmp_path)
    try:
        assert _receive(notify_socket, proc) == b'READY=1'
        # Every service started before systemd was told: the API answers
        # at once and the banner is out.
        assert _api_answers(url)
        assert _BANNER in proc.log()
        # Only once: notify_once() drops NOTIFY_SOCKET afterwards.
        notify_socket.settimeout(1)
        with pytest.raises(TimeoutError):
            notify_socket.recv(512)
        assert proc.alive()
    finally:
        _stop(proc)


def test_sigusr2_writes_a_report_and_the_process_goes_on(tmp_path):
    proc, url = _start(tmp_path)
    try:
        _wait_until_started(proc)
        proc.signal(signal.SIGUSR2)
        report = processes.wait_for(lambda: _whole_report(proc.log()), 30,
                                    what='the Guru Meditation Report')
        for title in (REPORT_TITLE, 'Threads', 'Processes', 'Configuration'):
            assert _section(title).search(report), title
        assert 'OpenStack Cyborg' in report
        # Secrets are masked: the embedded default's transport is fake:/.
        assert 'transport_url = ***' in report
        assert 'fake:/' not in report
        # SIGUSR2's default action would have ended the process.
        time.sleep(1)
        assert proc.alive(), report
        assert _api_answers(url)
    finally:
        _stop(proc)


def test_file_event_handler_writes_a_report_into_log_dir(tmp_path):
    trigger = tmp_path / 'gmr-trigger'
    trigger.touch()
    reports = tmp_path / 'reports'
    reports.mkdir()
    proc, _ = _start(tmp_path, oslo_reports={
        'log_dir': str(reports), 'file_event_handler': str(trigger),
        'file_event_handler_interval': 1})
    try:
        _wait_until_started(proc)
        # NOTE(tests): the watcher compares the file's modification time
        # with the time it started; a touch a second later is newer even
        # where modification times are in whole seconds.
        time.sleep(1.1)
        os.utime(trigger)
        written = processes.wait_for(
            lambda: list(reports.iterdir()), 30, what='a report file')
        assert len(written) == 1
        assert written[0].name.startswith('cyborg-all-in-one_gurumeditation_')
        report = processes.wait_for(
            lambda: _whole_report(written[0].read_text()), 10,
            what='the whole report')
        assert _section(REPORT_TITLE).search(report)
        # Into the file only, not onto standard error.
        assert REPORT_TITLE not in proc.log()
        assert proc.alive(), proc.log()
    finally:
        _stop(proc)


def test_missing_file_to_watch_is_a_config_error(tmp_path):
    proc, _ = _start(tmp_path, oslo_reports={
        'file_event_handler': str(tmp_path / 'no-such-file')})
    try:
        assert proc.proc.wait(timeout=60) == 1
        assert 'ERROR: [oslo_reports] file_event_handler' in proc.log()
    finally:
        if proc.alive():
            proc.proc.kill()
