"""Private MariaDB and RabbitMQ servers a bench restarts.

The machine's own MariaDB, RabbitMQ and PostgreSQL serve other jobs: the
bench never stops them. The servers it restarts are its own, started from
a temporary directory on free ports and removed with it.
"""

import os
import shutil
import signal
import subprocess

import pymysql

from cyborg.tests import processes

START_TIMEOUT = 120
_RABBIT_BIN = '/usr/lib/rabbitmq/bin'


def _binary(name):
    # NOTE(bench): Debian's /usr/sbin/rabbitmq-* wrappers switch to the
    # rabbitmq user, whose environment would name the shared node.
    path = os.path.join(_RABBIT_BIN, name)
    return path if os.path.exists(path) else shutil.which(name) or name


class PrivateMariaDB:
    """A mariadbd of the bench's own, with one database ``cyborg``."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, 'mariadb')
        self.port = processes.free_port()
        self.url = ('mysql+pymysql://root@127.0.0.1:%d/cyborg?charset=utf8mb4'
                    % self.port)
        self.log_path = os.path.join(workdir, 'mariadb.log')
        self.proc = None

    def __enter__(self):
        os.makedirs(self.dir)
        installed = subprocess.run(
            [shutil.which('mariadb-install-db') or 'mysql_install_db',
             '--no-defaults', '--datadir=' + os.path.join(self.dir, 'data'),
             '--auth-root-authentication-method=normal', '--user=root',
             '--skip-test-db'], capture_output=True, text=True, timeout=120)
        if installed.returncode != 0:
            raise RuntimeError('mariadb-install-db failed: %s'
                               % installed.stderr[-2000:])
        try:
            self.start()
            conn = self.connect(None)
            with conn.cursor() as cursor:
                cursor.execute('CREATE DATABASE cyborg CHARACTER SET utf8mb4')
            conn.close()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self):
        with open(self.log_path, 'a') as log:
            self.proc = subprocess.Popen(
                [shutil.which('mariadbd') or 'mysqld', '--no-defaults',
                 '--datadir=' + os.path.join(self.dir, 'data'),
                 '--socket=' + os.path.join(self.dir, 'sock'),
                 '--pid-file=' + os.path.join(self.dir, 'pid'),
                 '--port=%d' % self.port, '--bind-address=127.0.0.1',
                 '--user=root', '--skip-log-bin', '--max-connections=1000',
                 '--innodb-buffer-pool-size=128M'],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.wait_for(self._answers, START_TIMEOUT, interval=0.1,
                           what='the private MariaDB')

    def _answers(self):
        if self.proc.poll() is not None:
            raise RuntimeError('mariadbd exited %s; see %s' % (
                self.proc.returncode, self.log_path))
        try:
            self.connect(None).close()
        except pymysql.MySQLError:
            return False
        return True

    def connect(self, database='cyborg'):
        return pymysql.connect(host='127.0.0.1', port=self.port, user='root',
                               password='', database=database,
                               autocommit=True, charset='utf8mb4',
                               connect_timeout=3, read_timeout=30)

    def stop(self):
        """A clean shutdown (SIGTERM), as a service manager's restart."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __exit__(self, *exc_info):
        self.stop()


class PrivateRabbit:
    """A RabbitMQ node of the bench's own; guest may log in on loopback."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, 'rabbitmq')
        self.port = processes.free_port()
        self.node = 'chaos-%d@localhost' % os.getpid()
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.port
        self.log_path = os.path.join(workdir, 'rabbitmq.log')
        self.proc = None
        self.env = None

    def __enter__(self):
        os.makedirs(os.path.join(self.dir, 'home'))
        config = os.path.join(self.dir, 'rabbitmq.conf')
        with open(config, 'w') as out:
            out.write('listeners.tcp.local = 127.0.0.1:%d\n' % self.port)
        plugins = os.path.join(self.dir, 'enabled_plugins')
        with open(plugins, 'w') as out:
            out.write('[].\n')
        # NOTE(bench): a HOME of its own gives the node and rabbitmqctl one
        # fresh Erlang cookie, whoever runs the bench.
        self.env = dict(
            os.environ, HOME=os.path.join(self.dir, 'home'),
            RABBITMQ_NODENAME=self.node, RABBITMQ_CONFIG_FILE=config,
            RABBITMQ_CONF_ENV_FILE=os.path.join(self.dir, 'env.conf'),
            RABBITMQ_DIST_PORT=str(processes.free_port()),
            RABBITMQ_MNESIA_BASE=os.path.join(self.dir, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(self.dir, 'log'),
            RABBITMQ_ENABLED_PLUGINS_FILE=plugins,
            RABBITMQ_PID_FILE=os.path.join(self.dir, 'pid'))
        open(self.env['RABBITMQ_CONF_ENV_FILE'], 'w').close()
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _ctl(self, *args, timeout=60):
        return subprocess.run([_binary('rabbitmqctl'), '-n', self.node,
                               '-q', *args], env=self.env,
                              capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self):
        with open(self.log_path, 'a') as log:
            self.proc = subprocess.Popen(
                [_binary('rabbitmq-server')], env=self.env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        processes.wait_for(self._started, START_TIMEOUT, interval=0.5,
                           what='the private RabbitMQ node %s' % self.node)

    def _started(self):
        if self.proc.poll() is not None:
            raise RuntimeError('rabbitmq-server exited %s; see %s' % (
                self.proc.returncode, self.log_path))
        return self._ctl('await_startup', timeout=30).returncode == 0

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self._ctl('stop', timeout=120)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __exit__(self, *exc_info):
        self.stop()
