"""The embedded default: one process, SQLite, in-process messaging."""

import signal
import time

import pytest
import requests

from cyborg.tests import processes

pytestmark = pytest.mark.functional


def _start(tmp_path, port):
    conf = processes.write_config(tmp_path / 'aio.conf', {
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': 'aio'},
        'api': {'port': port},
    })
    return processes.Process('cyborg-all-in-one', conf, tmp_path)


def _fake_device(url):
    resp = requests.get(url + '/v2/devices', timeout=5)
    if resp.status_code == 200 and resp.json()['devices']:
        return resp.json()['devices']
    return None


def test_device_within_five_seconds_and_restart_keeps_data(tmp_path):
    port = processes.free_port()
    url = 'http://127.0.0.1:%d' % port
    proc = _start(tmp_path, port)
    started = time.monotonic()
    try:
        devices = processes.wait_for(lambda: _fake_device(url), 30,
                                     interval=0.1, what='the fake device')
        elapsed = time.monotonic() - started
        assert elapsed < 5, 'device visible only after %.1fs' % elapsed
        assert [d['hostname'] for d in devices] == ['aio']
        assert 'listening' not in proc.log() or url in proc.log()
        assert url in proc.log()
    finally:
        code = proc.stop(signal.SIGINT)
    assert code == 0, proc.log()
    assert 'Traceback' not in proc.log()

    proc = _start(tmp_path, port)
    try:
        again = processes.wait_for(lambda: _fake_device(url), 30,
                                   what='the device after a restart')
        assert [d['uuid'] for d in again] == [d['uuid'] for d in devices]
    finally:
        assert proc.stop(signal.SIGTERM) == 0, proc.log()
