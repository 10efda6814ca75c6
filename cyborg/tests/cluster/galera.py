"""A MariaDB Galera cluster of private mariadbd processes on loopback.

The nodes are Debian's ``mariadb-server`` with the ``galera-4`` provider,
each with a data directory, a client port, a group-communication port, an
IST port and an SST port of its own, running as the package's ``mysql``
user as Debian's service does. The first node bootstraps the cluster; the
others join it by incremental transfer, or by rsync when they must. The
machine's own MariaDB is never touched.
"""

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pymysql

from cyborg.tests import processes

PROVIDERS = ('/usr/lib/galera/libgalera_smm.so', '/usr/lib/libgalera_smm.so')
START_TIMEOUT = 180
RESTARTS = 2
RESTART_SEC = 5  # as Debian's mariadb.service
_SAFE = re.compile(r'^safe_to_bootstrap:\s*(\d)', re.M)
_RECOVERED = re.compile(r'WSREP: Recovered position: (\S+:-?\d+)')
_SEQNO = re.compile(r'^seqno:\s*(-?\d+)', re.M)


def provider():
    """Path of the Galera provider library, or None when not installed."""
    return next((path for path in PROVIDERS if os.path.exists(path)), None)


def _server_user():
    """Debian's ``mysql`` user, else root (a server built by hand)."""
    try:
        pwd.getpwnam('mysql')
    except KeyError:
        return 'root'
    return 'mysql'


def _chown_tree(path, user):
    """Give ``path`` and all below it to ``user``: an rsync state
    transfer runs as the server's user and must replace every file."""
    found = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.lchown(name, found.pw_uid, found.pw_gid)


def _write_safe_to_bootstrap(datadir, value):
    path = os.path.join(datadir, 'grastate.dat')
    with open(path) as state:
        text = state.read()
    with open(path, 'w') as state:
        state.write(_SAFE.sub('safe_to_bootstrap: %d' % value, text))


class Node:
    """One mariadbd of the cluster; ``port`` takes SQL clients."""

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index
        self.name = 'galera-%d' % index
        self.dir = os.path.join(cluster.dir, self.name)
        self.port = processes.free_port()
        self.gcomm_port = processes.free_port()
        self.ist_port = processes.free_port()
        self.sst_port = processes.free_port()
        self.log_path = os.path.join(cluster.log_dir, '%s.log' % self.name)
        self.proc = None
        self.restarts = 0
        self.bootstrapped = False

    @property
    def datadir(self):
        return os.path.join(self.dir, 'data')

    def write_config(self, peers):
        options = {
            'datadir': self.datadir,
            'socket': os.path.join(self.dir, 'sock'),
            'pid-file': os.path.join(self.dir, 'pid'),
            'port': self.port,
            'bind-address': '127.0.0.1',
            'user': self.cluster.user,
            'skip-name-resolve': 'ON',
            'max-connections': 1000,
            'innodb-buffer-pool-size': '64M',
            'innodb-log-file-size': '32M',
            'innodb-flush-log-at-trx-commit': 2,
            # NOTE(tests): what Galera requires of every node.
            'binlog-format': 'ROW',
            'default-storage-engine': 'InnoDB',
            'innodb-autoinc-lock-mode': 2,
            'wsrep-on': 'ON',
            'wsrep-provider': provider(),
            'wsrep-cluster-name': self.cluster.name,
            'wsrep-cluster-address': 'gcomm://' + ','.join(
                '127.0.0.1:%d' % node.gcomm_port for node in peers),
            'wsrep-node-name': self.name,
            'wsrep-node-address': '127.0.0.1:%d' % self.gcomm_port,
            'wsrep-sst-method': 'rsync',
            'wsrep-sst-receive-address': '127.0.0.1:%d' % self.sst_port,
            # NOTE(tests): a node that is killed is suspected after 3 s
            # and evicted after 6 s (5 s and 15 s by default), so that a
            # test's failover does not wait out production's patience.
            'wsrep-provider-options': '"gmcast.listen_addr=tcp://127.0.0.1:'
            '%d;ist.recv_addr=127.0.0.1:%d;gcache.size=128M;'
            'evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;'
            'evs.inactive_check_period=PT1S;evs.keepalive_period=PT1S"'
            % (self.gcomm_port, self.ist_port),
        }
        path = os.path.join(self.dir, 'my.cnf')
        with open(path, 'w') as out:
            out.write('[mysqld]\n')
            out.writelines('%s=%s\n' % item for item in options.items())
        return path

    def start(self, bootstrap=False, restarts=RESTARTS):
        """Start mariadbd; ``bootstrap`` makes it a new primary component.
        Returns without waiting (``wait_synced`` waits, restarting it up
        to ``restarts`` times should it die of a signal meanwhile)."""
        self.restarts, self.bootstrapped = restarts, bootstrap
        command = [shutil.which('mariadbd') or 'mysqld',
                   '--defaults-file=' + os.path.join(self.dir, 'my.cnf')]
        if bootstrap:
            command.append('--wsrep-new-cluster')
        position = self._recover()
        if position:
            command.append('--wsrep-start-position=' + position)
        with open(self.log_path, 'a') as log:
            self.proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def _recover(self):
        """The position a crashed node's storage holds, as Debian's
        ``galera_recovery`` finds it before systemd starts the server:
        without it, a node killed mid-write asks for a full transfer."""
        if self.grastate()[1] != -1 or not os.path.exists(
                os.path.join(self.datadir, 'ibdata1')):
            return None
        log = os.path.join(self.dir, 'recover.log')
        subprocess.run(
            [shutil.which('mariadbd') or 'mysqld',
             '--defaults-file=' + os.path.join(self.dir, 'my.cnf'),
             '--wsrep-recover', '--log-error=' + log],
            capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        with open(log) as text:
            found = _RECOVERED.findall(text.read())
        return found[-1] if found else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def connect(self, database=None, timeout=3):
        return pymysql.connect(host='127.0.0.1', port=self.port, user='root',
                               password='', database=database,
                               autocommit=True, charset='utf8mb4',
                               connect_timeout=timeout, read_timeout=30)

    def status(self, name):
        """A ``wsrep_*`` status variable, or None when unreachable."""
        try:
            conn = self.connect()
        except pymysql.MySQLError:
            return None
        try:
            with conn.cursor() as cursor:
                cursor.execute("SHOW STATUS LIKE %s", (name,))
                row = cursor.fetchone()
                return row[1] if row else None
        finally:
            conn.close()

    def synced(self):
        if (self.proc is not None and self.proc.poll() is not None
                and self.proc.returncode < 0 and self.restarts):
            # NOTE(tests): Debian's mariadb.service restarts a server that
            # dies of a signal (Restart=on-abnormal, RestartSec=5s); a
            # joiner aborts when its state transfer fails (its IST port
            # taken, say), and a second start usually gets one. Only a
            # start being waited for is restarted, never a node a test
            # killed.
            self.restarts -= 1
            time.sleep(RESTART_SEC)
            self.start(self.bootstrapped, self.restarts)
            return False
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError('%s exited %s; see %s:\n%s' % (
                self.name, self.proc.returncode, self.log_path,
                self.log_errors()))
        if self.status('wsrep_local_state_comment') != 'Synced':
            return False
        self.restarts = 0
        return True

    def log_errors(self, most=15):
        """The last ``most`` error and warning lines of the node's log:
        why it stopped, where the log itself is gone with its CI run."""
        try:
            with open(self.log_path, errors='replace') as log:
                lines = [line.rstrip() for line in log
                         if '[ERROR]' in line or '[Warning]' in line]
        except OSError as exc:
            return 'no log: %s' % exc
        return '\n'.join(lines[-most:])

    def wait_synced(self, timeout=START_TIMEOUT):
        processes.wait_for(self.synced, timeout, interval=0.2,
                           what='%s to be Synced' % self.name)

    def kill(self):
        """SIGKILL, as a host that loses power."""
        self.restarts = 0
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout=120):
        """A clean shutdown (SIGTERM), as a service manager's stop."""
        self.restarts = 0
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def grastate(self):
        """(safe_to_bootstrap, seqno) from the node's grastate.dat."""
        try:
            with open(os.path.join(self.datadir, 'grastate.dat')) as state:
                text = state.read()
        except OSError:
            return 0, -1
        safe, seqno = _SAFE.search(text), _SEQNO.search(text)
        return (int(safe.group(1)) if safe else 0,
                int(seqno.group(1)) if seqno else -1)


class Cluster:
    """``size`` Galera nodes; ``with Cluster(workdir) as galera``.

    ``nodes[0]`` bootstraps. A user ``haproxy`` (no password, no rights)
    exists for a load balancer's ``mysql-check``.
    """

    def __init__(self, workdir, size=3, log_dir=None):
        if provider() is None:
            raise RuntimeError('the Galera provider is not installed '
                               '(apt-get install galera-4)')
        self.user = _server_user()
        # NOTE(tests): not below ``workdir``: pytest's directories are
        # root's alone, and the server (and its rsync) run as mysql.
        self.dir = tempfile.mkdtemp(prefix='cyborg-galera-')
        os.chmod(self.dir, 0o755)
        self.log_dir = log_dir or workdir
        self.name = 'cyborg-test-%d' % os.getpid()
        self.nodes = []
        for index in range(1, size + 1):
            self.nodes.append(Node(self, index))

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self):
        for node in self.nodes:
            os.makedirs(node.datadir)
            node.write_config(self.nodes)
            _chown_tree(node.dir, self.user)
        first = self.nodes[0]
        installed = subprocess.run(
            [shutil.which('mariadb-install-db') or 'mysql_install_db',
             '--defaults-file=' + os.path.join(first.dir, 'my.cnf'),
             '--auth-root-authentication-method=normal',
             '--user=' + self.user,
             '--skip-test-db', '--datadir=' + first.datadir],
            capture_output=True, text=True, timeout=180)
        if installed.returncode != 0:
            raise RuntimeError('mariadb-install-db failed: %s'
                               % installed.stderr[-2000:])
        first.start(bootstrap=True).wait_synced()
        conn = first.connect()
        with conn.cursor() as cursor:
            cursor.execute("CREATE USER IF NOT EXISTS 'haproxy'@'127.0.0.1'")
        conn.close()
        # NOTE(tests): the joiners start from a copy of the first node's
        # files taken after a clean stop, so they join by the cluster's
        # position with no full state transfer: seconds, not a donor
        # paused for an rsync per node.
        first.stop()
        for node in self.nodes[1:]:
            shutil.rmtree(node.datadir)
            shutil.copytree(first.datadir, node.datadir, symlinks=True)
            _write_safe_to_bootstrap(node.datadir, 0)
            _chown_tree(node.datadir, self.user)
        first.start(bootstrap=True).wait_synced()
        for node in self.nodes[1:]:
            node.start()
        for node in self.nodes[1:]:
            node.wait_synced()

    def size(self):
        """``wsrep_cluster_size`` as the first answering node sees it."""
        for node in self.nodes:
            value = node.status('wsrep_cluster_size')
            if value is not None:
                return int(value)
        return 0

    def create_database(self, name):
        conn = self.any_node().connect()
        with conn.cursor() as cursor:
            cursor.execute('CREATE DATABASE `%s` CHARACTER SET utf8mb4'
                           % name)
        conn.close()

    def any_node(self):
        for node in self.nodes:
            if node.alive() and node.status('wsrep_ready') == 'ON':
                return node
        raise RuntimeError('no Galera node is ready')

    def rejoin(self, node, timeout=START_TIMEOUT):
        """Start a stopped or killed node; it catches up (IST or SST)."""
        node.start().wait_synced(timeout)

    def stop_all(self):
        """Every node shut down cleanly, one after the other, as an
        operator's full-cluster stop: the last one is safe to bootstrap."""
        for node in self.nodes:
            node.stop()

    def start_all(self, timeout=START_TIMEOUT):
        """Start a cluster that was stopped whole: the node whose state
        says it is safe to bootstrap (else the most advanced) first."""
        first = max(self.nodes, key=lambda n: n.grastate())
        first.start(bootstrap=True).wait_synced(timeout)
        for node in self.nodes:
            if node is not first:
                node.start()
        for node in self.nodes:
            node.wait_synced(timeout)

    def __exit__(self, *exc_info):
        for node in self.nodes:
            node.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
