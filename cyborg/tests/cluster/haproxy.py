"""HAProxy (Debian's ``haproxy``) in front of Galera and the cyborg-api.

The database listener sends every connection to one Galera node and
keeps the others as backups, as the common deployment tools do, so that
writes never certify against each other across nodes; the API listener
balances round-robin over the API processes that pass an HTTP check.
"""

import csv
import io
import os
import signal
import socket
import subprocess

from cyborg.tests import processes
from cyborg.tests.cluster import packages

START_TIMEOUT = 30


class HAProxy:
    """``with HAProxy(workdir, galera_nodes, api_ports) as proxy``.

    :param galera_nodes: galera.Node objects; the first is the writer
        while its check passes.
    :param api_ports: ports of the cyborg-api processes.
    """

    def __init__(self, workdir, galera_nodes, api_ports, log_dir=None):
        self.dir = os.path.join(workdir, 'haproxy')
        self.galera_nodes = galera_nodes
        self.api_ports = api_ports
        self.db_port = processes.free_port()
        self.api_port = processes.free_port()
        self.socket = os.path.join(self.dir, 'admin.sock')
        self.log_path = os.path.join(log_dir or workdir, 'haproxy.log')
        self.proc = None

    @property
    def api_url(self):
        return 'http://127.0.0.1:%d' % self.api_port

    def db_url(self, database):
        return ('mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8mb4'
                % (self.db_port, database))

    def _config(self):
        lines = [
            'global',
            '    maxconn 4000',
            '    stats socket %s mode 600 level admin' % self.socket,
            'defaults',
            '    timeout connect 2s',
            '    retries 2',
            'listen galera',
            '    bind 127.0.0.1:%d' % self.db_port,
            '    mode tcp',
            # NOTE(tests): pooled database connections idle for long;
            # an hour, as the deployment tools set it.
            '    timeout client 3600s',
            '    timeout server 3600s',
            '    option mysql-check user haproxy post-41',
        ]
        for index, node in enumerate(self.galera_nodes):
            # NOTE(tests): a node found down has its connections cut, so
            # clients reconnect to the new writer instead of hanging.
            lines.append(
                '    server %s 127.0.0.1:%d check inter 1s rise 2 fall 2 '
                'on-marked-down shutdown-sessions%s' % (
                    node.name, node.port, ' backup' if index else ''))
        lines += [
            'listen cyborg_api',
            '    bind 127.0.0.1:%d' % self.api_port,
            '    mode http',
            '    balance roundrobin',
            '    timeout client 120s',
            '    timeout server 120s',
            '    option httpchk GET /',
            # NOTE(tests): a request whose connection an API process that
            # died refused goes to another one (the request never
            # reached it, so even a create is safe to send again).
            '    option redispatch 1',
            '    retry-on conn-failure',
            '    http-check expect status 200',
        ]
        # NOTE(tests): a check waits for a free API thread like any
        # request: one busy API must not look dead. A dead one refuses
        # connections at once, and its requests go to the other
        # (redispatch) until three checks have failed.
        lines.append('    timeout check 10s')
        for index, port in enumerate(self.api_ports, 1):
            lines.append('    server api-%d 127.0.0.1:%d check inter 2s '
                         'rise 2 fall 3' % (index, port))
        path = os.path.join(self.dir, 'haproxy.cfg')
        with open(path, 'w') as out:
            out.write('\n'.join(lines) + '\n')
        return path

    def __enter__(self):
        packages.ensure('haproxy')
        os.makedirs(self.dir, exist_ok=True)
        self.config = self._config()
        self.start()
        return self

    def start(self):
        with open(self.log_path, 'a') as log:
            self.proc = subprocess.Popen(
                [packages.FILES['haproxy'], '-db', '-f', self.config],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        processes.wait_for(self._listening, START_TIMEOUT, interval=0.1,
                           what='HAProxy to listen')
        return self

    def _listening(self):
        if self.proc.poll() is not None:
            raise RuntimeError('haproxy exited %s; see %s' % (
                self.proc.returncode, self.log_path))
        try:
            socket.create_connection(('127.0.0.1', self.db_port), 1).close()
        except OSError:
            return False
        return True

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            # NOTE(tests): SIGTERM is HAProxy's hard stop: every
            # connection it carries is cut, as a restart by a service
            # manager cuts them.
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self):
        self.stop()
        return self.start()

    def command(self, text):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(self.socket)
            sock.sendall(text.encode() + b'\n')
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b''.join(chunks).decode()

    def servers(self, proxy):
        """{server: status} of one listener ('galera' or 'cyborg_api')."""
        text = self.command('show stat').lstrip('# ')
        return {row['svname']: row['status']
                for row in csv.DictReader(io.StringIO(text))
                if row['pxname'] == proxy and
                row['svname'] not in ('FRONTEND', 'BACKEND')}

    def writer(self):
        """The Galera node HAProxy sends connections to now, or None."""
        status = self.servers('galera')
        for node in self.galera_nodes:
            if status.get(node.name, '').startswith('UP'):
                return node
        return None

    def __exit__(self, *exc_info):
        self.stop()
