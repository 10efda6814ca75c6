"""A RabbitMQ cluster of private nodes on loopback, with quorum queues.

Each node is Debian's ``rabbitmq-server`` with a name, an AMQP port, a
distribution port and a database of its own; they share one Erlang
cookie and find each other by the classic peer-discovery list, as a
deployment tool's first start does. The machine's own node is never
touched.
"""

import json
import os
import shutil
import signal
import subprocess

from cyborg.tests import processes

START_TIMEOUT = 180
_RABBIT_BIN = '/usr/lib/rabbitmq/bin'

#: [oslo_messaging_rabbit] of services on a cluster: quorum queues for
#: the topics and, so that a node's loss takes no reply or fanout queue
#: with it, for the transient ones too.
OSLO_MESSAGING = {
    'rabbit_quorum_queue': 'true',
    'rabbit_transient_quorum_queue': 'true',
}

#: No busy waiting of the Erlang schedulers (three nodes share the CPUs
#: of one machine with every other service).
ERL_ARGS = '+sbwt none +sbwtdcpu none +sbwtdio none'


def binary(name):
    # NOTE(tests): Debian's /usr/sbin/rabbitmq-* wrappers switch to the
    # rabbitmq user, whose environment would name the machine's node.
    path = os.path.join(_RABBIT_BIN, name)
    return path if os.path.exists(path) else shutil.which(name) or name


class Node:
    """One node; ``port`` takes AMQP clients."""

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.name = 'rabbit-%d' % index
        self.node = 'cyborg%d-%d@localhost' % (os.getpid(), index)
        self.dir = os.path.join(cluster.dir, self.name)
        self.port = processes.free_port()
        self.dist_port = processes.free_port()
        self.log_path = os.path.join(cluster.log_dir, '%s.log' % self.name)
        self.proc = None

    def configure(self, peers):
        os.makedirs(self.dir)
        config = os.path.join(self.dir, 'rabbitmq.conf')
        lines = ['listeners.tcp.local = 127.0.0.1:%d' % self.port,
                 'cluster_formation.peer_discovery_backend = classic_config',
                 # NOTE(tests): a cut node rejoins by itself.
                 'cluster_partition_handling = pause_minority']
        lines += ['cluster_formation.classic_config.nodes.%d = %s'
                  % (i, peer.node) for i, peer in enumerate(peers, 1)]
        with open(config, 'w') as out:
            out.write('\n'.join(lines) + '\n')
        plugins = os.path.join(self.dir, 'enabled_plugins')
        with open(plugins, 'w') as out:
            out.write('[].\n')
        self.env = dict(
            os.environ, HOME=self.cluster.home, RABBITMQ_NODENAME=self.node,
            RABBITMQ_CONFIG_FILE=config,
            RABBITMQ_CONF_ENV_FILE=os.path.join(self.dir, 'env.conf'),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_MNESIA_BASE=os.path.join(self.dir, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(self.dir, 'log'),
            RABBITMQ_ENABLED_PLUGINS_FILE=plugins,
            RABBITMQ_PID_FILE=os.path.join(self.dir, 'pid'),
            # NOTE(tests): the Erlang schedulers spin while idle, taking
            # CPU the other services of a shared host need; RabbitMQ's
            # runtime guide has this for hosts with few, shared CPUs.
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=ERL_ARGS)
        open(self.env['RABBITMQ_CONF_ENV_FILE'], 'w').close()

    def start(self):
        """Start the node; ``wait_started`` waits for it."""
        with open(self.log_path, 'a') as log:
            self.proc = subprocess.Popen(
                [binary('rabbitmq-server')], env=self.env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        return self

    def ctl(self, *args, timeout=60, tool='rabbitmqctl'):
        return subprocess.run([binary(tool), '-n', self.node, '-q', *args],
                              env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def started(self):
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError('%s exited %s; see %s' % (
                self.name, self.proc.returncode, self.log_path))
        try:
            return self.ctl('await_startup', timeout=30).returncode == 0
        except subprocess.TimeoutExpired:
            # NOTE(tests): a node booting on busy CPUs; asked again until
            # wait_started's own deadline.
            return False

    def wait_started(self, timeout=START_TIMEOUT):
        processes.wait_for(self.started, timeout, interval=0.5,
                           what='RabbitMQ node %s' % self.node)

    def kill(self):
        """SIGKILL of the whole node (beam and its helpers)."""
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout=120):
        """A clean stop, as a service manager's (``rabbitmqctl stop``)."""
        if not self.alive():
            return
        self.ctl('stop', timeout=timeout)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()


class Cluster:
    """``size`` RabbitMQ nodes; ``with Cluster(workdir) as rabbit``."""

    def __init__(self, workdir, size=3, log_dir=None):
        self.dir = os.path.join(workdir, 'rabbitmq')
        self.log_dir = log_dir or workdir
        self.home = os.path.join(self.dir, 'home')
        self.nodes = [Node(self, index) for index in range(1, size + 1)]

    @property
    def url(self):
        """A transport URL naming every node, as oslo.messaging takes it."""
        return 'rabbit://%s/' % ','.join(
            'guest:guest@127.0.0.1:%d' % node.port for node in self.nodes)

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self):
        os.makedirs(self.home)
        # NOTE(tests): one Erlang cookie in a HOME of the cluster's own, so
        # its nodes and rabbitmqctl trust each other, whoever runs this.
        cookie = os.path.join(self.home, '.erlang.cookie')
        with open(cookie, 'w') as out:
            out.write(os.urandom(16).hex().upper())
        os.chmod(cookie, 0o400)
        for node in self.nodes:
            node.configure(self.nodes)
        # NOTE(tests): the first node forms the cluster; the others start
        # once it runs and join it from the discovery list.
        self.nodes[0].start().wait_started()
        for node in self.nodes[1:]:
            node.start()
        for node in self.nodes[1:]:
            node.wait_started()
        processes.wait_for(lambda: len(self.running()) == len(self.nodes),
                           START_TIMEOUT, interval=0.5,
                           what='every RabbitMQ node in the cluster')

    def any_node(self):
        for node in self.nodes:
            if node.alive():
                return node
        raise RuntimeError('no RabbitMQ node is running')

    def running(self):
        """Names of the nodes the cluster says are running."""
        result = self.any_node().ctl('cluster_status', '--formatter',
                                     'json')
        if result.returncode != 0:
            return []
        try:
            return json.loads(result.stdout).get('running_nodes', [])
        except ValueError:
            return []

    def queue_leaders(self):
        """{queue: name of the node that leads it} of the quorum queues."""
        result = self.any_node().ctl('list_queues', '--no-table-headers',
                                     'name', 'type', 'leader')
        found = {}
        for line in result.stdout.splitlines():
            parts = line.split('\t')
            if len(parts) == 3 and parts[1] == 'quorum':
                found[parts[0]] = parts[2]
        return found

    def leader(self):
        """The node that leads the most quorum queues."""
        counts = {}
        for name in self.queue_leaders().values():
            counts[name] = counts.get(name, 0) + 1
        by_name = {node.node: node for node in self.nodes}
        if not counts:
            return self.nodes[0]
        return by_name[max(counts, key=counts.get)]

    def rolling_restart(self, pause=0):
        """Stop and start each node in turn, waiting until it is back."""
        for node in self.nodes:
            node.stop()
            node.start().wait_started()
            processes.wait_for(
                lambda: len(self.running()) == len(self.nodes),
                START_TIMEOUT, interval=0.5,
                what='%s back in the cluster' % node.node)

    def __exit__(self, *exc_info):
        for node in self.nodes:
            node.kill()
