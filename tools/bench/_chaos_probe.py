"""What the chaos bench reads of Cyborg's database, the agents and the logs.

The probe reads a Galera node directly (the first that answers), not
through HAProxy, so that a fault of HAProxy's does not blind it. A read
that finds no node answering is tried again for ``patience`` seconds and
then raises ``ProbeError``: the bench stops with an error instead of
reading a failed query as "nothing found".
"""

import contextlib
import glob
import json
import os
import re
import time

import pymysql

_BIND_FAILED = re.compile(
    r'Bind of ARQ ([0-9a-f-]{36}) failed on (\S+): (.*)$', re.M)
_TOOK_LIVE = re.compile(r'lost the bind', re.I)
_LOG_LEVEL = re.compile(r'^\S+ \S+ \d+ (ERROR|CRITICAL) ', re.M)


class ProbeError(Exception):
    """The probe could not read what it needs to judge."""


class Probe:
    def __init__(self, galera, patience=180):
        self.galera = galera
        self.patience = patience
        self._conn = None

    def query(self, sql, args=None):
        deadline = time.monotonic() + self.patience
        last = None
        while time.monotonic() < deadline:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                with self._conn.cursor() as cursor:
                    cursor.execute(sql, args)
                    return cursor.fetchall()
            except pymysql.MySQLError as exc:
                last = exc
                self.close()
                time.sleep(0.5)
        raise ProbeError('no Galera node answered %r for %d s: %s'
                         % (sql[:60], self.patience, last))

    def _connect(self):
        for node in self.galera.nodes:
            if not node.alive():
                continue
            try:
                conn = node.connect('cyborg')
                with conn.cursor() as cursor:
                    cursor.execute("SHOW STATUS LIKE 'wsrep_ready'")
                    if cursor.fetchone()[1] == 'ON':
                        return conn
                conn.close()
            except pymysql.MySQLError:
                continue
        raise pymysql.OperationalError(2003, 'no Galera node is ready')

    def close(self):
        if self._conn is not None:
            # NOTE(bench): a connection that broke may fail to close too.
            with contextlib.suppress(pymysql.MySQLError):
                self._conn.close()
        self._conn = None

    def owned(self):
        """{conductor: [uuid of each ARQ whose bind it holds]}."""
        found = {}
        for owner, uuid in self.query(
                "SELECT owner, uuid FROM accelerator_requests WHERE owner "
                "IS NOT NULL AND state = 'BindStarted'"):
            found.setdefault(owner, []).append(uuid)
        return found

    def states(self, uuids):
        """{uuid: state} of these ARQs (absent: deleted)."""
        if not uuids:
            return {}
        return dict(self.query(
            'SELECT uuid, state FROM accelerator_requests WHERE uuid IN %s',
            (list(uuids),)))

    def double_bound(self):
        """Attach handles held by more than one ARQ."""
        return len(self.query(
            'SELECT attach_handle_id FROM accelerator_requests WHERE '
            'attach_handle_id IS NOT NULL GROUP BY attach_handle_id HAVING '
            'COUNT(*) > 1'))

    def leaked(self):
        """Handles marked in use that no ARQ holds."""
        return self.query(
            'SELECT COUNT(*) FROM attach_handles h LEFT JOIN '
            'accelerator_requests a ON a.attach_handle_id = h.id WHERE '
            'h.in_use AND a.id IS NULL')[0][0]

    def host_leaks(self, workdir):
        """Handles an agent prepared (its handle cache) for an ARQ that does
        not hold that handle in the database: host-side work no one will
        release."""
        held = set(self.query(
            'SELECT h.uuid, a.uuid FROM accelerator_requests a JOIN '
            'attach_handles h ON h.id = a.attach_handle_id'))
        leaks = []
        for path in glob.glob(os.path.join(workdir, 'agent-*',
                                           'agent-*-handles.json')):
            try:
                with open(path) as cache:
                    holders = json.load(cache).get('holders') or {}
            except (OSError, ValueError):
                continue
            leaks += [(handle, arq) for handle, arq in holders.items()
                      if (handle, arq) not in held]
        return leaks

    def stuck(self, unchanged_for):
        """ARQs BindStarted or Deleting unchanged for that many seconds
        (the database's clock): [(uuid, state, owner)]."""
        return [list(row) for row in self.query(
            "SELECT uuid, state, owner FROM accelerator_requests WHERE "
            "state IN ('BindStarted', 'Deleting') AND COALESCE(updated_at, "
            "created_at) < UTC_TIMESTAMP() - INTERVAL %s SECOND",
            (max(1, int(unchanged_for)),))]

    def no_instance(self):
        """uuids of the ARQs with no instance."""
        return {row[0] for row in self.query(
            'SELECT uuid FROM accelerator_requests WHERE instance_uuid IS '
            'NULL')}

    def left(self):
        """ARQs of an instance still in the database: {state: count}."""
        return dict(self.query(
            'SELECT state, COUNT(*) FROM accelerator_requests WHERE '
            'instance_uuid IS NOT NULL GROUP BY state'))

    def targets(self):
        """{provider uuid: host} of every deployable with a provider."""
        return {rp: host for host, rp in self.query(
            'SELECT v.hostname, d.rp_uuid FROM deployables d JOIN devices v '
            'ON v.id = d.device_id WHERE d.rp_uuid IS NOT NULL')}


class Logs:
    """The services' logs of a stack, read from an offset on."""

    def __init__(self, stack):
        self.stack = stack

    def _services(self):
        # NOTE(bench): Cyborg's own services; Placement is not judged
        # here (it logs a traceback for every request while the database
        # is down).
        return [p for p in self.stack.procs if p.name.startswith('cyborg-')]

    def mark(self):
        return {p.log_path: os.path.getsize(p.log_path)
                for p in self._services()}

    def since(self, mark):
        """{process name: text written since ``mark``}."""
        found = {}
        for proc in self._services():
            with open(proc.log_path, 'rb') as log:
                log.seek(mark.get(proc.log_path, 0))
                found[proc.name] = log.read().decode('utf-8', 'replace')
        return found

    @staticmethod
    def figures(texts, seconds):
        lines = sum(text.count('\n') for text in texts.values())
        errors = sum(len(_LOG_LEVEL.findall(text)) for text in
                     texts.values())
        return {'log_lines_per_s': round(lines / max(seconds, 1e-3), 1),
                'error_lines': errors}

    @staticmethod
    def bind_failures(texts):
        """{ARQ uuid: (host, reason)} the conductors logged."""
        return {uuid: (host, reason) for name, text in texts.items()
                if name.startswith('cyborg-conductor')
                for uuid, host, reason in _BIND_FAILED.findall(text)}

    @staticmethod
    def took_live(texts, besides):
        """Lines where a conductor other than ``besides`` says another one
        took its bind: work taken from a conductor that was alive."""
        return sum(len(_TOOK_LIVE.findall(text)) for name, text in
                   texts.items() if name.startswith('cyborg-conductor') and
                   name != besides)
