"""Runs Cyborg's console scripts as real processes for the tests."""

import concurrent.futures
import os
import random
import signal
import socket
import subprocess
import sys
import time

import requests

BIN = os.path.dirname(sys.executable)


def script(name):
    """Path of one of Cyborg's console scripts in this environment."""
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        raise RuntimeError('%s is not installed in %s (pip install -e .)'
                           % (name, BIN))
    return path


_HANDED_OUT = set()
_LOWEST = 10000


def _ephemeral_low():
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port):
    with socket.socket() as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def free_port():
    """A loopback port nothing listens on, for a process to listen on.

    It comes from below the kernel's ephemeral range: a port from that
    range may be taken, between this answer and the listener's bind, as
    the local end of any outgoing connection, and a Galera joiner whose
    IST port is taken aborts. No port is handed out twice in a process.
    """
    high = _ephemeral_low() - 1
    if high - _LOWEST > 1000:
        for _ in range(200):
            port = random.randint(_LOWEST, high)
            if port not in _HANDED_OUT and _bindable(port):
                _HANDED_OUT.add(port)
                return port
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def write_config(path, sections):
    """Write an ini file from {section: {option: value}}."""
    with open(path, 'w') as out:
        for section, options in sections.items():
            out.write('[%s]\n' % section)
            for key, value in options.items():
                out.write('%s = %s\n' % (key, value))
            out.write('\n')
    return str(path)


def layered(*layers):
    """{section: {option: value}} of ``layers``, a later one's options
    over an earlier one's."""
    merged = {}
    for layer in layers:
        for section, options in layer.items():
            merged[section] = dict(merged.get(section, {}), **options)
    return merged


def run(name, *args, timeout=60):
    """Run a command to completion; returns the CompletedProcess."""
    return subprocess.run([script(name), *args], capture_output=True,
                          text=True, timeout=timeout)


class Process:
    """A long-running process whose output goes to a log file.

    ``command`` defaults to the console script ``name`` reading
    ``config_file``; ``stop_signal`` is what stop() sends unless told.
    """

    def __init__(self, name, config_file, log_dir, command=None,
                 stop_signal=signal.SIGTERM):
        self.name = name
        self.command = command or [script(name), '--config-file',
                                   str(config_file)]
        self.stop_signal = stop_signal
        self.log_path = os.path.join(str(log_dir), '%s.log' % name)
        open(self.log_path, 'w').close()
        self.start()

    def start(self):
        """Start the process; ``offset`` is where its output begins in the
        log, which a restart appends to."""
        self.offset = os.path.getsize(self.log_path)
        self.signalled = False
        self._log = open(self.log_path, 'a')
        self.proc = subprocess.Popen(
            self.command, stdout=self._log, stderr=subprocess.STDOUT,
            text=True)
        return self

    def log(self):
        with open(self.log_path) as log:
            return log.read()

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig=None):
        """Send ``sig``, or ``stop_signal`` if not sent yet; do not wait."""
        if self.alive() and (sig is not None or not self.signalled):
            self.proc.send_signal(sig or self.stop_signal)
            self.signalled = True

    def stop(self, sig=None, timeout=30):
        """Signal the process (unless signal() did) and return its exit code.
        """
        if self.alive():
            self.signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError('%s did not stop within %ss:\n%s' % (
                    self.name, timeout, self.log()[-4000:])) from None
        self._log.close()
        return self.proc.returncode


def wait_for(predicate, timeout, interval=0.2, what='condition'):
    """Poll until predicate() returns something truthy; return it."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (requests.ConnectionError, requests.Timeout) as exc:
            last_error = exc
        time.sleep(interval)
    raise AssertionError('timed out after %ss waiting for %s (%s)'
                         % (timeout, what, last_error))


def stack_configs(tmp_path, host, db_url, transport_url, agent_sections,
                  extra=None):
    """Config files of a conductor, an agent on ``host`` and a noauth API.

    The schema is brought to head on ``db_url``; only the conductor's file
    names the database.

    :param agent_sections: the agent's sections besides [DEFAULT].
    :param extra: sections every file gets, as from a shared cyborg.conf.
    :returns: ``({console script: config file}, API port)``
    """
    port = free_port()
    common = {'transport_url': transport_url, 'state_path': str(tmp_path)}
    files = {
        'cyborg-conductor': {
            'DEFAULT': dict(common, host='ctl-1'),
            'database': {'connection': db_url},
            'conductor': {'heartbeat_interval': 2},
        },
        'cyborg-agent': dict(agent_sections, DEFAULT=dict(common, host=host)),
        'cyborg-api': {
            'DEFAULT': dict(common, host='api-1'),
            'api': {'host_ip': '127.0.0.1', 'port': port,
                    'auth_strategy': 'noauth'},
        },
    }
    confs = {}
    for name, sections in files.items():
        for section, options in (extra or {}).items():
            sections[section] = dict(sections.get(section, {}), **options)
        confs[name] = write_config(
            tmp_path / ('%s.conf' % name.split('-', 1)[1]), sections)
    synced = run('cyborg-dbsync', '--config-file', confs['cyborg-conductor'],
                 'upgrade')
    assert synced.returncode == 0, synced.stderr
    return confs, port


def stop_cleanly(procs, steps=None):
    """Stop processes; each must exit 0 without a trace.

    :param steps: lists of ``procs`` whose processes stop at once, one list
        after the other; by default one process at a time, last first.
    """
    codes = {}
    for step in steps or [[p] for p in reversed(procs)]:
        with concurrent.futures.ThreadPoolExecutor(len(step)) as pool:
            codes.update(zip([p.name for p in step],
                             pool.map(lambda p: p.stop(), step), strict=True))
    logs = {p.name: p.log() for p in procs}
    for name, code in codes.items():
        assert code == 0, '%s exited %s:\n%s' % (name, code,
                                                 logs[name][-4000:])
    for name, text in logs.items():
        assert 'Traceback' not in text, '%s logged:\n%s' % (name, text)
