"""Cyborg on the clusters operators run: every process real, on loopback.

``ClusterStack`` starts a 3-node Galera cluster, a 3-node RabbitMQ
cluster with quorum queues, HAProxy in front of Galera (one writer, two
backups) and of two cyborg-api processes, Placement as a process on
Galera, three cyborg-conductor processes and one cyborg-agent process
per compute host (the fake driver). Everything is stopped and deleted
when the ``with`` block ends, however it ends.
"""

import contextlib
import os
import sys
import time

import requests

from cyborg import embedded_placement
from cyborg.tests import deployments
from cyborg.tests import processes
from cyborg.tests import tcp_proxy
from cyborg.tests.cluster import galera
from cyborg.tests.cluster import haproxy
from cyborg.tests.cluster import rabbit

START_TIMEOUT = 120


class ClusterStack:
    """``with ClusterStack(workdir, hosts) as stack``.

    :param hosts: compute hosts; each runs a cyborg-agent process.
    :param conductors: cyborg-conductor processes.
    :param apis: cyborg-api processes behind HAProxy.
    :param sections: {section: {option: value}} every service's
        configuration file gets besides its own ([fake_driver],
        [conductor], [nova]...).
    :param cuttable: hosts whose agent reaches RabbitMQ through a
        tcp_proxy.TcpProxy per node (``agent_proxies[host]``), which a
        test cuts to take that one agent off the broker.
    """

    def __init__(self, workdir, hosts, conductors=3, apis=2, sections=None,
                 galera_size=3, rabbit_size=3, cuttable=()):
        self.workdir = workdir
        self.hosts = list(hosts)
        self.sections = sections or {}
        self.conductor_count = conductors
        self.api_count = apis
        self.galera_size = galera_size
        self.rabbit_size = rabbit_size
        self.conductors = []
        self.apis = []
        self.agents = {}
        self.cuttable = tuple(cuttable)
        self.agent_proxies = {}
        self.procs = []
        self._exit = contextlib.ExitStack()

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        enter = self._exit.enter_context
        self.galera = enter(galera.Cluster(self.workdir, self.galera_size))
        self.rabbit = enter(rabbit.Cluster(self.workdir, self.rabbit_size))
        self.api_ports = [processes.free_port()
                          for _ in range(self.api_count)]
        self.haproxy = enter(haproxy.HAProxy(
            self.workdir, self.galera.nodes, self.api_ports))
        for name in ('cyborg', 'placement'):
            self.galera.create_database(name)
        self.db_url = self.haproxy.db_url('cyborg')
        self.transport_url = self.rabbit.url
        self.api_url = self.haproxy.api_url
        for host in self.cuttable:
            self.agent_proxies[host] = [
                enter(tcp_proxy.TcpProxy(('127.0.0.1', node.port)))
                for node in self.rabbit.nodes]
        self.placement = self._add(deployments.PlacementProcess(
            self.haproxy.db_url('placement'), self.hosts[0], self.workdir))
        confs = self._configs()
        synced = processes.run('cyborg-dbsync', '--config-file',
                               confs['conductor-1'], 'upgrade', timeout=300)
        if synced.returncode != 0:
            raise RuntimeError('cyborg-dbsync upgrade failed:\n%s'
                               % synced.stderr[-4000:])
        for index in range(1, self.conductor_count + 1):
            self.conductors.append(self._service(
                'cyborg-conductor', confs['conductor-%d' % index],
                'cyborg-conductor-%d' % index))
        for index in range(1, self.api_count + 1):
            self.apis.append(self._service(
                'cyborg-api', confs['api-%d' % index],
                'cyborg-api-%d' % index))
        self.placement.wait_listening()
        client = embedded_placement.client_for(self.placement.url)
        for host in self.hosts[1:]:
            embedded_placement.ensure_compute_node(client, host)
        for proc in self.conductors:
            self.wait_logged(proc, 'started on host')
        for host in self.hosts:
            self.agents[host] = self._service(
                'cyborg-agent', confs['agent-%s' % host],
                'cyborg-agent-%s' % host)
        processes.wait_for(self._api_answers, START_TIMEOUT, interval=0.2,
                           what='cyborg-api to answer through HAProxy')

    def _add(self, proc):
        self.procs.append(proc)
        return proc

    def _service(self, script, conf, name):
        return self._add(processes.Process(
            name, conf, self.workdir,
            command=[processes.script(script), '--config-file', conf]))

    def _configs(self):
        placement = {'auth_type': 'admin_token',
                     'endpoint': self.placement.url,
                     'token': embedded_placement.ADMIN_TOKEN}
        common = {'DEFAULT': {'transport_url': self.transport_url,
                              'state_path': self.workdir},
                  'oslo_messaging_rabbit': dict(rabbit.OSLO_MESSAGING),
                  'placement': placement}
        files = {}
        for index in range(1, self.conductor_count + 1):
            # NOTE(tests): a bind takes a ready device only; the agents'
            # new devices are activated at discovery, as an operator of a
            # test cluster would want.
            files['conductor-%d' % index] = {
                'DEFAULT': {'host': 'ctl-%d' % index},
                'conductor': {'auto_activate_new_devices': True},
                'database': {'connection': self.db_url}}
        for index, port in enumerate(self.api_ports, 1):
            files['api-%d' % index] = {
                'DEFAULT': {'host': 'api-%d' % index},
                'api': {'host_ip': '127.0.0.1', 'port': port,
                        'auth_strategy': 'noauth'}}
        for host in self.hosts:
            # NOTE(tests): each agent keeps its cache in a directory of its
            # own, as it would on its own host.
            state = os.path.join(self.workdir, 'agent-%s' % host)
            os.makedirs(state, exist_ok=True)
            default = {'host': host, 'state_path': state}
            if host in self.agent_proxies:
                default['transport_url'] = 'rabbit://%s/' % ','.join(
                    'guest:guest@127.0.0.1:%d' % proxy.port
                    for proxy in self.agent_proxies[host])
            files['agent-%s' % host] = {
                'DEFAULT': default,
                'agent': {'enabled_drivers': 'fake_driver',
                          'report_interval': 2}}
        paths = {}
        for name, own in files.items():
            merged = processes.layered(common, self.sections, own)
            paths[name] = processes.write_config(
                os.path.join(self.workdir, '%s.conf' % name), merged)
        return paths

    def restart(self, proc, skew=None, kill=False):
        """Stop a service (SIGKILL when ``kill``, else its clean stop) and
        start it again, with its wall clock ``skew`` seconds ahead when
        given (cyborg.tests.skewed_run)."""
        if kill:
            proc.proc.kill()
            proc.proc.wait()
        else:
            proc.stop(timeout=120)
        if not hasattr(proc, 'plain_command'):
            proc.plain_command = list(proc.command)
        proc.command = list(proc.plain_command)
        if skew:
            script = os.path.basename(proc.plain_command[0])
            proc.command = [sys.executable, '-m', 'cyborg.tests.skewed_run',
                            str(skew), script] + proc.plain_command[1:]
        proc.start()
        if proc in self.conductors:
            self.wait_logged(proc, 'started on host')

    def wait_logged(self, proc, text, timeout=START_TIMEOUT):
        def logged():
            if not proc.alive():
                raise RuntimeError('%s exited %s:\n%s' % (
                    proc.name, proc.proc.returncode,
                    proc.log()[proc.offset:][-4000:]))
            return text in proc.log()[proc.offset:]

        processes.wait_for(logged, timeout, interval=0.05,
                           what='%s to log %r' % (proc.name, text))

    def _api_answers(self):
        return requests.get(self.api_url + '/v2/devices',
                            timeout=30).status_code == 200

    def deployables(self):
        resp = requests.get(self.api_url + '/v2/deployables', timeout=30)
        resp.raise_for_status()
        return resp.json()['deployables']

    def wait_inventory(self, per_host, timeout=START_TIMEOUT):
        """Wait until every host's ``per_host`` deployables have their
        providers in Placement, and every device is ready (activated at
        discovery: a bind takes a ready device only)."""
        def ready():
            found = [d for d in self.deployables() if d['rp_uuid']]
            if len(found) < per_host * len(self.hosts):
                return False
            resp = requests.get(
                self.api_url + '/v2/devices', timeout=30,
                headers={'OpenStack-API-Version': 'accelerator 2.4'})
            resp.raise_for_status()
            return all(device['status'] == 'ready'
                       for device in resp.json()['devices'])

        processes.wait_for(ready, timeout, interval=0.5,
                           what='every agent\'s deployables in Placement')

    def endpoints(self):
        """What a person needs to use the stack, by name."""
        return {
            'Cyborg API (HAProxy)': self.api_url,
            'database (HAProxy)': self.db_url,
            'transport_url': self.transport_url,
            'Placement': self.placement.url,
            'Galera nodes': ', '.join('%s 127.0.0.1:%d' % (n.name, n.port)
                                      for n in self.galera.nodes),
            'RabbitMQ nodes': ', '.join(
                '%s 127.0.0.1:%d' % (n.node, n.port)
                for n in self.rabbit.nodes),
            'HAProxy admin socket': self.haproxy.socket,
            'logs': self.workdir,
        }

    def __exit__(self, *exc_info):
        try:
            # NOTE(tests): agents and APIs first, so that nothing calls a
            # conductor that is already gone.
            order = (list(self.agents.values()) + self.apis +
                     self.conductors + [p for p in self.procs
                                        if p.name.startswith('placement')])
            for proc in order:
                with contextlib.suppress(AssertionError):
                    proc.stop(timeout=60)
        finally:
            self._exit.close()


def wait_until(predicate, timeout, interval=0.2):
    """Seconds until ``predicate()`` was true, or None after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(interval)
    return None
