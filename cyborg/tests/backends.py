"""Real services for tests: start them if down, lend throwaway databases."""

from collections.abc import Iterator
import contextlib
import fcntl
import glob
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from typing import Literal
import uuid

import psycopg2
import pymysql

HOST = '127.0.0.1'
MYSQL_PORT = 3306
POSTGRESQL_PORT = 5432
RABBITMQ_PORT = 5672
BACKENDS = ('sqlite', 'mysql', 'postgresql')
START_TIMEOUT = 60.0

Backend = Literal['sqlite', 'mysql', 'postgresql']


class BackendUnavailable(RuntimeError):
    """A service the tests need is down and could not be started."""


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


def _mysql_admin() -> pymysql.connections.Connection:
    return pymysql.connect(host=HOST, port=MYSQL_PORT, user='root',
                           password='', charset='utf8mb4', autocommit=True,
                           connect_timeout=5)


def _postgresql_admin():
    connection = psycopg2.connect(host=HOST, port=POSTGRESQL_PORT,
                                  user='postgres', dbname='postgres',
                                  connect_timeout=5)
    # NOTE(tests): CREATE and DROP DATABASE refuse to run in a transaction.
    connection.autocommit = True
    return connection


def _probe_mysql() -> None:
    _mysql_admin().close()


def _probe_postgresql() -> None:
    # NOTE(tests): PostgreSQL accepts TCP connections while it still replays
    # its WAL and refuses logins; only a login says it is ready.
    _postgresql_admin().close()


def _probe_rabbitmq() -> None:
    if not _port_open(RABBITMQ_PORT):
        raise ConnectionRefusedError('port %d is closed' % RABBITMQ_PORT)


def _wait(probe, deadline: float) -> Exception | None:
    """Run probe until it succeeds (None) or the deadline passes (error)."""
    while True:
        try:
            probe()
            return None
        except Exception as exc:  # noqa: BLE001 - any failure means "not yet"
            if time.monotonic() >= deadline:
                return exc
        time.sleep(0.5)


@contextlib.contextmanager
def _start_lock(name: str) -> Iterator[None]:
    # NOTE(tests): several test runs may find a service down at once; one
    # starts it while the others wait, instead of racing two daemons.
    path = os.path.join(tempfile.gettempdir(), 'cyborg-tests-%s.lock' % name)
    with open(path, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _ensure(name: str, port: int, probe, command: list[str]) -> None:
    if _port_open(port) and _wait(probe, time.monotonic() + 1) is None:
        return
    with _start_lock(name):
        deadline = time.monotonic() + START_TIMEOUT
        output = ''
        if not _port_open(port):
            with tempfile.TemporaryFile(mode='w+') as log:
                # NOTE(tests): a daemon may keep inherited pipes open, which
                # would block us reading them; it gets a file, and its own
                # session so that stopping the tests does not stop it.
                try:
                    subprocess.run(command, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True,
                                   timeout=START_TIMEOUT, check=False)
                except (OSError, subprocess.TimeoutExpired) as exc:
                    output = str(exc)
                log.seek(0)
                output = (output + log.read()).strip()
        error = _wait(probe, deadline)
    if error is not None:
        raise BackendUnavailable(
            '%s is not usable on %s:%d %.0f s after running %r: %s%s' % (
                name, HOST, port, START_TIMEOUT, ' '.join(command), error,
                '; its output: %s' % output if output else ''))


def ensure_mariadb() -> None:
    """Start MariaDB unless it already accepts logins on 127.0.0.1:3306."""
    _ensure('MariaDB', MYSQL_PORT, _probe_mysql,
            ['start-stop-daemon', '--start', '--oknodo', '--background',
             '--exec', '/usr/sbin/mariadbd'])


def ensure_postgresql() -> None:
    """Start PostgreSQL unless it already accepts logins on 127.0.0.1:5432."""
    versions = sorted((os.path.basename(os.path.dirname(path))
                       for path in glob.glob('/etc/postgresql/*/main')),
                      key=lambda v: [int(p) for p in v.split('.')
                                     if p.isdigit()])
    version = versions[-1] if versions else 'NONE'
    _ensure('PostgreSQL', POSTGRESQL_PORT, _probe_postgresql,
            ['pg_ctlcluster', '--skip-systemctl-redirect', version, 'main',
             'start'])


def ensure_rabbitmq() -> None:
    """Start RabbitMQ unless it already listens on 127.0.0.1:5672."""
    _ensure('RabbitMQ', RABBITMQ_PORT, _probe_rabbitmq,
            ['rabbitmq-server', '-detached'])


def _unique_name() -> str:
    return 'cyborg_test_%s' % uuid.uuid4().hex


@contextlib.contextmanager
def _sqlite_database(name: str) -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix='cyborg_test_')
    try:
        path = os.path.join(directory, '%s.sqlite' % name)
        sqlite3.connect(path).close()
        yield 'sqlite:///%s' % path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def _mysql_database(name: str) -> Iterator[str]:
    ensure_mariadb()
    admin = _mysql_admin()
    try:
        with admin.cursor() as cursor:
            cursor.execute('CREATE DATABASE `%s` CHARACTER SET utf8mb4' % name)
        try:
            yield ('mysql+pymysql://root@%s:%d/%s?charset=utf8mb4'
                   % (HOST, MYSQL_PORT, name))
        finally:
            with admin.cursor() as cursor:
                # NOTE(tests): a connection left in a transaction holds a
                # metadata lock that would make DROP DATABASE wait forever.
                cursor.execute('SELECT id FROM information_schema.processlist'
                               ' WHERE db = %s AND id <> CONNECTION_ID()',
                               (name,))
                for (thread_id,) in cursor.fetchall():
                    with contextlib.suppress(pymysql.MySQLError):
                        cursor.execute('KILL %d' % thread_id)
                cursor.execute('DROP DATABASE IF EXISTS `%s`' % name)
    finally:
        admin.close()


@contextlib.contextmanager
def _postgresql_database(name: str) -> Iterator[str]:
    ensure_postgresql()
    admin = _postgresql_admin()
    try:
        with admin.cursor() as cursor:
            cursor.execute('CREATE DATABASE "%s"' % name)
        try:
            yield ('postgresql+psycopg2://postgres@%s:%d/%s'
                   % (HOST, POSTGRESQL_PORT, name))
        finally:
            with admin.cursor() as cursor:
                # NOTE(tests): PostgreSQL will not drop a database that any
                # session (a pooled engine the test forgot) is connected to.
                cursor.execute('SELECT pg_terminate_backend(pid) FROM '
                               'pg_stat_activity WHERE datname = %s AND '
                               'pid <> pg_backend_pid()', (name,))
                cursor.execute('DROP DATABASE IF EXISTS "%s"' % name)
    finally:
        admin.close()


_DATABASES = {
    'sqlite': _sqlite_database,
    'mysql': _mysql_database,
    'postgresql': _postgresql_database,
}


@contextlib.contextmanager
def temp_database(backend: Backend) -> Iterator[str]:
    """Yield the SQLAlchemy URL of a new, empty, uniquely named database.

    ``backend`` is 'sqlite', 'mysql' (MariaDB) or 'postgresql'; the server
    is started if it is down. The database is dropped on exit, even if
    connections to it are still open.
    """
    try:
        factory = _DATABASES[backend]
    except KeyError:
        raise ValueError('unknown backend %r, expected one of %s'
                         % (backend, ', '.join(BACKENDS))) from None
    with factory(_unique_name()) as url:
        yield url


def _rabbitmqctl(*args: str) -> None:
    result = subprocess.run(['rabbitmqctl', '--quiet', *args],
                            stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=START_TIMEOUT, check=False)
    if result.returncode != 0:
        raise BackendUnavailable('rabbitmqctl %s failed (%d): %s' % (
            ' '.join(args), result.returncode,
            (result.stderr or result.stdout).strip()))


@contextlib.contextmanager
def temp_rabbit_vhost() -> Iterator[str]:
    """Yield a transport URL of a new RabbitMQ vhost, deleted on exit."""
    ensure_rabbitmq()
    vhost = _unique_name()
    _rabbitmqctl('add_vhost', vhost)
    try:
        _rabbitmqctl('set_permissions', '-p', vhost, 'guest', '.*', '.*',
                     '.*')
        yield 'rabbit://guest:guest@%s:%d/%s' % (HOST, RABBITMQ_PORT, vhost)
    finally:
        _rabbitmqctl('delete_vhost', vhost)


@contextlib.contextmanager
def cyborg_engine(url: str, override, prepare=None):
    """oslo.db's engine on ``url`` (so that errors are translated as in the
    conductor), migrated, and patched into Cyborg's own sessions, with
    ``[database] connection`` set to it; ``prepare(engine)`` runs first
    (to add connection events)."""
    from oslo_db.sqlalchemy import engines

    from cyborg.db import migration
    from cyborg.db import session

    override('connection', url, group='database')
    engine = engines.create_engine(url)
    if prepare is not None:
        prepare(engine)
    migration.upgrade('head', engine=engine)
    restore = session.main.patch_engine(engine)
    try:
        yield engine
    finally:
        restore()
        engine.dispose()
