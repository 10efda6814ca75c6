"""Real services of the bootstorm benchmark, and what it measures them by.

``Stack`` starts, for one run: a MariaDB database for Cyborg (schema by
``cyborg-dbsync upgrade``), a PostgreSQL database for Placement, a RabbitMQ
vhost, Placement as one or more processes sharing one port, ``K``
cyborg-conductor processes and one
cyborg-api process (noauth). Everything is stopped, dropped and deleted
when the ``with`` block ends, however it ends.
"""

import collections
import concurrent.futures
import contextlib
import json
import os
import re
import signal
import time

import _meters
import psycopg2
import pymysql
import requests
from sqlalchemy.engine import make_url

from cyborg import embedded_placement
from cyborg import rpc
from cyborg.tests import backends
from cyborg.tests import deployments
from cyborg.tests import processes

START_TIMEOUT = 120
_LOG_LINE = re.compile(
    r'^(\S+ \S+ \d+) ([A-Z]+) (\S+) (?:\[[^]]*\] )?(.*)$')
_CYBORG_FRAME = re.compile(
    r'File "[^"]*/(cyborg/[^"]+)", line (\d+), in (\w+)')
_EXCEPTION_LINE = re.compile(r'^[A-Za-z_][\w.]*: ')


class Failed(Exception):
    """A correctness check failed; the bench exits non-zero."""


def log_errors(text):
    """Counts of the ERROR and CRITICAL records of an oslo.log log.

    A record whose message spans lines (a traceback) counts once, named
    by its logger, its first line, its last exception line and the
    innermost frame in Cyborg's code.
    """
    found = collections.Counter()
    record = None
    for line in text.splitlines() + ['']:
        match = _LOG_LINE.match(line)
        if record and (match is None and line or match is not None and
                       match.group(1, 2, 3) == record['key']):
            # NOTE(bench): the lines of a message have no prefix; those of
            # its traceback have the record's.
            message = match.group(4) if match else line
            frame = _CYBORG_FRAME.search(message)
            if frame:
                record['frame'] = ' (in %s:%s, %s)' % frame.groups()
            elif _EXCEPTION_LINE.match(message):
                record['exception'] = ' -> ' + message[:200]
            continue
        if record:
            if record['exception'][4:64] in record['first']:
                record['exception'] = ''
            found['%(logger)s: %(first)s%(exception)s%(frame)s'
                  % record] += 1
        record = None
        if match and match.group(2) in ('ERROR', 'CRITICAL'):
            record = {'key': match.group(1, 2, 3), 'logger': match.group(3),
                      'first': match.group(4)[:160], 'exception': '',
                      'frame': ''}
        elif not match and line.startswith('Traceback'):
            found['a traceback outside a log record'] += 1
    return found


class SqlCounter:
    """MariaDB's global ``Questions`` counter, less this probe's queries.

    It counts every client's statements: on a server nobody else uses
    during the run, those are the conductors' (the API, the agents and
    Placement hold no connection to MariaDB).
    """

    def __init__(self, db_url):
        url = make_url(db_url)
        self.conn = pymysql.connect(
            host=url.host, port=url.port or 3306, user=url.username,
            password=url.password or '', database=url.database,
            autocommit=True, charset='utf8mb4')
        self.own = 0

    def query(self, sql, args=None):
        self.own += 1
        with self.conn.cursor() as cursor:
            cursor.execute(sql, args)
            return cursor.fetchall()

    def mark(self):
        status = dict(self.query(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', "
            "'Connections')"))
        return int(status['Questions']), self.own, int(status['Connections'])

    def since(self, mark):
        """Other clients' statements since ``mark``, and the connections
        they opened."""
        value, own, connections = self.mark()
        return (value - mark[0]) - (own - mark[1]), connections - mark[2]

    def other_clients(self):
        """Connections to other databases than ours: a shared server."""
        return self.query(
            'SELECT COUNT(*) FROM information_schema.processlist WHERE '
            'db IS NOT NULL AND db <> DATABASE()')[0][0]

    def counts(self):
        return tuple(self.query('SELECT COUNT(*) FROM %s' % table)[0][0]
                     for table in ('devices', 'deployables',
                                   'attach_handles'))

    def dump(self):
        """hostname -> sorted [(cpid type, cpid info, deployable names,
        handle infos)], one entry per device row."""
        devices = {}
        for dev_id, host, cp_type, cp_info in self.query(
                'SELECT d.id, d.hostname, c.cpid_type, c.cpid_info FROM '
                'devices d LEFT JOIN controlpath_ids c ON c.device_id = '
                'd.id'):
            devices[dev_id] = (host, cp_type, canonical(cp_info), [], [])
        for dev_id, name in self.query(
                'SELECT device_id, name FROM deployables'):
            devices[dev_id][3].append(name)
        for dev_id, a_type, a_info in self.query(
                'SELECT d.device_id, h.attach_type, h.attach_info FROM '
                'attach_handles h JOIN deployables d ON d.id = '
                'h.deployable_id'):
            devices[dev_id][4].append((a_type, canonical(a_info)))
        found = collections.defaultdict(list)
        for host, cp_type, cp_info, names, handles in devices.values():
            found[host].append((cp_type, cp_info, tuple(sorted(names)),
                                tuple(sorted(handles))))
        return {host: sorted(items) for host, items in found.items()}

    def version(self):
        return self.query('SELECT VERSION()')[0][0]

    def close(self):
        self.conn.close()


def canonical(info):
    """A JSON string (or dict) in one spelling."""
    if isinstance(info, str):
        try:
            info = json.loads(info)
        except ValueError:
            return info
    return json.dumps(info, sort_keys=True)


class PlacementProbe:
    """Reads Placement's database directly: no request to Placement."""

    def __init__(self, db_url):
        url = make_url(db_url)
        self.conn = psycopg2.connect(
            host=url.host, port=url.port or 5432, user=url.username,
            dbname=url.database)
        self.conn.autocommit = True

    def _query(self, sql):
        with self.conn.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def children(self):
        """Number of providers below a root."""
        return self._query('SELECT COUNT(*) FROM resource_providers WHERE '
                           'parent_provider_id IS NOT NULL')[0][0]

    def tree(self):
        """root name -> sorted [(child name, {class: (total, reserved)})].
        """
        invs = collections.defaultdict(dict)
        for rp_id, rc_id, total, reserved in self._query(
                'SELECT resource_provider_id, resource_class_id, total, '
                'reserved FROM inventories'):
            invs[rp_id][rc_id] = (total, reserved)
        found = collections.defaultdict(list)
        for rp_id, name, root in self._query(
                'SELECT rp.id, rp.name, root.name FROM resource_providers '
                'rp JOIN resource_providers root ON root.id = '
                'rp.root_provider_id WHERE rp.parent_provider_id IS NOT '
                'NULL'):
            found[root].append((name, sorted(invs[rp_id].values())))
        return {root: sorted(items) for root, items in found.items()}

    def version(self):
        return self._query('SHOW server_version')[0][0]

    def close(self):
        self.conn.close()


class Stack:
    """The services of one run; ``with Stack(...) as stack``.

    :param hosts: compute node names whose root providers are created in
        Placement, as Nova's compute service would.
    :param placement_workers: Placement processes serving one port.
    :param db_url: Cyborg's database, when the caller owns its server (a
        new database on the shared MariaDB server otherwise).
    :param transport_url: the same for RabbitMQ (a new vhost otherwise).
    :param sections: {section: {option: value}} every service's
        configuration file gets besides its own.
    """

    def __init__(self, workdir, hosts, conductors, log, placement_workers=1,
                 db_url=None, transport_url=None, sections=None):
        self.workdir = workdir
        self.db_url = db_url
        self.transport_url = transport_url
        self.sections = sections or {}
        self.hosts = hosts
        self.conductor_count = conductors
        self.placement_workers = placement_workers
        self.log = log
        self.conductors = []
        #: name -> peak RSS (kB) of that conductor's killed processes.
        self.killed_rss = {}
        self.procs = []
        self.problems = []
        self._exit = contextlib.ExitStack()

    # --- Start ---------------------------------------------------------------

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        enter = self._exit.enter_context
        if self.db_url is None:
            self.db_url = enter(backends.temp_database('mysql'))
        self.placement_db = enter(backends.temp_database('postgresql'))
        if self.transport_url is None:
            self.transport_url = enter(backends.temp_rabbit_vhost())
        self.placement = deployments.PlacementProcess(
            self.placement_db, self.hosts[0], self.workdir,
            reuse_port=self.placement_workers > 1)
        self.placements = [self._add(self.placement)]
        self.sql = SqlCounter(self.db_url)
        self._exit.callback(self.sql.close)
        self.placement_probe = PlacementProbe(self.placement_db)
        self._exit.callback(self.placement_probe.close)
        conf = self._configs()
        synced = processes.run('cyborg-dbsync', '--config-file',
                               conf['conductor-1'], 'upgrade', timeout=300)
        if synced.returncode != 0:
            raise Failed('cyborg-dbsync upgrade failed:\n%s' %
                         synced.stderr[-4000:])
        for index in range(1, self.conductor_count + 1):
            name = 'cyborg-conductor-%d' % index
            self.conductors.append(self._add(processes.Process(
                name, None, self.workdir, command=[
                    processes.script('cyborg-conductor'), '--config-file',
                    conf['conductor-%d' % index]])))
        self.api = self._add(processes.Process('cyborg-api', conf['api'],
                                               self.workdir))
        self.placement.wait_listening()
        # NOTE(bench): the first worker created the schema; the others
        # start on it, sharing its port as a WSGI server's workers do.
        port = int(self.placement.url.rsplit(':', 1)[1])
        for index in range(2, self.placement_workers + 1):
            self.placements.append(self._add(deployments.PlacementProcess(
                self.placement_db, self.hosts[0], self.workdir, port=port,
                reuse_port=True, name='placement-%d' % index)))
        for proc in self.placements[1:]:
            proc.wait_listening()
        self._create_compute_nodes()
        for proc in self.conductors:
            self.wait_conductor(proc)
        processes.wait_for(self._api_answers, START_TIMEOUT, interval=0.2,
                           what='cyborg-api to answer')
        # NOTE(bench): the bench's RPC transport must be gone before the
        # vhost is, or it keeps trying to reconnect to it.
        rpc.cleanup()
        self._exit.callback(rpc.cleanup)
        self.cpu = _meters.CpuMeter({
            'conductors': lambda: [p.proc.pid for p in self.conductors],
            'Placement': lambda: [p.proc.pid for p in self.placements],
            'API': [self.api.proc.pid],
            'agents (bench)': [os.getpid()],
            'MariaDB': _meters.pids_named('mariadbd', 'mysqld'),
            'PostgreSQL': lambda: _meters.pids_named('postgres'),
            'RabbitMQ': _meters.pids_named('beam.smp'),
        })

    def _add(self, proc):
        self.procs.append(proc)
        return proc

    def _configs(self):
        self.api_url = 'http://127.0.0.1:%d' % processes.free_port()
        common = {'transport_url': self.transport_url,
                  'state_path': self.workdir}
        files = {'api': {
            'DEFAULT': dict(common, host='bench-api'),
            'api': {'host_ip': '127.0.0.1',
                    'port': self.api_url.rsplit(':', 1)[1],
                    'auth_strategy': 'noauth'}}}
        for index in range(1, self.conductor_count + 1):
            files['conductor-%d' % index] = {
                'DEFAULT': dict(common, host='bench-ctl-%d' % index),
                'database': {'connection': self.db_url}}
        for sections in files.values():
            for section, options in self.sections.items():
                sections[section] = dict(sections.get(section, {}),
                                         **options)
        return {name: processes.write_config(
            os.path.join(self.workdir, '%s.conf' % name), sections)
            for name, sections in files.items()}

    def _create_compute_nodes(self):
        start = time.monotonic()

        def create(names):
            client = embedded_placement.client_for(self.placement.url)
            for name in names:
                embedded_placement.ensure_compute_node(client, name)

        chunks = [self.hosts[i::8] for i in range(8)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(create, chunks))
        self.log('  %d compute node providers created in Placement in '
                 '%.1f s' % (len(self.hosts), time.monotonic() - start))

    def wait_conductor(self, proc):
        def listening():
            if not proc.alive():
                raise Failed('%s exited %s:\n%s' % (
                    proc.name, proc.proc.returncode,
                    proc.log()[proc.offset:][-4000:]))
            return 'started on host' in proc.log()[proc.offset:]

        processes.wait_for(listening, START_TIMEOUT, interval=0.05,
                           what='%s to listen' % proc.name)

    def reset_peak_rss(self):
        """Start the conductors' ``VmHWM`` over, so that the next reading
        is the peak of what follows (Linux's ``clear_refs`` value 5)."""
        self.killed_rss.clear()
        for proc in self.conductors:
            try:
                with open('/proc/%d/clear_refs' % proc.proc.pid, 'w') as f:
                    f.write('5')
            except OSError:
                continue

    def conductor_rss_mib(self):
        """{conductor: peak RSS in MiB}: the largest ``VmHWM`` of its
        processes since ``reset_peak_rss`` (a killed one's as read just
        before the kill).
        """
        found = {}
        for proc in self.conductors:
            peaks = [self.killed_rss.get(proc.name),
                     _meters.peak_rss_kib(proc.proc.pid)]
            if any(peaks):
                found[proc.name] = round(
                    max(kib or 0 for kib in peaks) / 1024, 1)
        return found

    def _api_answers(self):
        return requests.get(self.api_url + '/v2/devices',
                            timeout=30).status_code == 200

    def kill_and_restart(self, proc):
        """SIGKILL a conductor and start it again at once."""
        pid = proc.proc.pid
        self.cpu.final[pid] = _meters.cpu_seconds(pid)
        peaks = [self.killed_rss.get(proc.name), _meters.peak_rss_kib(pid)]
        if any(peaks):
            self.killed_rss[proc.name] = max(kib or 0 for kib in peaks)
        proc.proc.send_signal(signal.SIGKILL)
        proc.proc.wait()
        proc.start()

    # --- Stop ----------------------------------------------------------------

    def __exit__(self, *exc_info):
        try:
            with concurrent.futures.ThreadPoolExecutor(
                    max(1, len(self.procs))) as pool:
                codes = dict(zip([p.name for p in self.procs],
                                 pool.map(self._stop, self.procs),
                                 strict=True))
            for proc in self.procs:
                if codes[proc.name] not in (0, None):
                    self.problems.append('%s exited %s' % (
                        proc.name, codes[proc.name]))
                for line, count in log_errors(proc.log()).most_common():
                    self.problems.append('%s logged %d x %s' % (
                        proc.name, count, line))
        finally:
            self._exit.close()

    @staticmethod
    def _stop(proc):
        try:
            return proc.stop(timeout=60)
        except AssertionError as exc:
            return str(exc).splitlines()[0]
