"""Process start-up shared by every Cyborg service, and the RPC service."""

import ctypes
import logging as py_logging
import os
import signal
import sys
import threading

from cheroot import wsgi
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_reports import guru_meditation_report as gmr
from oslo_reports import opts as gmr_opts
from oslo_service import backend
from oslo_service import service
from oslo_service import systemd

from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import exception
from cyborg import objects
from cyborg import rpc
from cyborg import version

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: Blocks of this size or more malloc maps on their own (glibc).
MMAP_THRESHOLD = 1024 * 1024
_M_MMAP_THRESHOLD = -3

_LOG_DEFAULTS = ['amqp=WARN', 'amqplib=WARN', 'oslo.messaging=INFO',
                 'oslo_messaging=INFO', 'sqlalchemy=WARN', 'stevedore=WARN',
                 'urllib3.connectionpool=WARN', 'keystonemiddleware=WARN',
                 'cheroot=WARN', 'pecan=WARN', 'routes=WARN',
                 'alembic=WARN', 'placement.requestlog=WARN']


def prepare_service(argv=None, default_config_files=None):
    """Parse configuration and set up logging and RPC defaults."""
    if backend.get_backend_type() != backend.BackendType.THREADING:
        raise RuntimeError('Cyborg services run on oslo.service\'s threading '
                           'backend; something selected %s first'
                           % backend.get_backend_type())
    argv = sys.argv[1:] if argv is None else argv
    logging.register_options(CONF)
    logging.set_defaults(default_log_levels=(
        logging.get_default_log_levels() + _LOG_DEFAULTS))
    rpc.set_defaults()
    gmr_opts.set_defaults(CONF)
    CONF(argv, project='cyborg', version=version.version_string(),
         default_config_files=default_config_files)
    logging.setup(CONF, 'cyborg')
    rpc.register_opts(CONF)
    objects.register_all()
    give_back_big_blocks()


def give_back_big_blocks():
    """Have glibc's malloc map every block of ``MMAP_THRESHOLD`` bytes or
    more on its own, so that freeing it gives the memory back; True if set.

    By default glibc raises that threshold (up to 32 MiB) each time such a
    block is freed, and keeps up to twice it free in each arena. The big
    strings of an RPC reply (a list's JSON text and oslo.messaging's two
    encodings of it, tens of MiB each) then come from the arena of the
    executor thread that answers, one arena per thread up to eight per CPU,
    and each arena keeps what the largest reply it served needed: a
    conductor's RSS grew by about 100 MiB for each thread that had served
    a device or deployable list. ``MALLOC_MMAP_THRESHOLD_`` in the
    environment is left as the operator set it.
    """
    if 'MALLOC_MMAP_THRESHOLD_' in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False  # not glibc: nothing to tune
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1


def fail(exc):
    """End the process with one line that names what is wrong."""
    print('ERROR: %s' % exc, file=sys.stderr)
    py_logging.shutdown()
    sys.exit(1)


class RPCService(service.Service):
    """Runs one manager's RPC endpoints and periodic work on native threads.

    ``manager`` provides ``target`` (an oslo.messaging Target without topic
    or server), and optionally ``init_host()``, ``periodic_tasks()`` (a list
    of ``(interval_seconds, callable)``; a callable may return the seconds
    until its next run) and ``del_host()``. ``endpoint``, when given,
    answers the RPC messages in the manager's place (a wrapper of it).
    """

    def __init__(self, manager, topic, host, binary, endpoint=None):
        super().__init__()
        self.manager = manager
        self.endpoint = endpoint or manager
        self.topic = topic
        self.host = host
        self.binary = binary
        self.rpcserver = None

    def start(self):
        super().start()
        rpc.init(CONF)
        init_host = getattr(self.manager, 'init_host', None)
        if init_host is not None:
            init_host()
        target = messaging.Target(topic=self.topic, server=self.host,
                                  version=self.manager.target.version)
        self.rpcserver = rpc.get_server(target, [self.endpoint])
        self.rpcserver.start()
        for interval, task in getattr(self.endpoint, 'periodic_tasks',
                                      lambda: [])():
            # NOTE(service): a task may return how long to wait before its
            # next run (a retry after a failure); None means the interval.
            self.tg.add_dynamic_timer_args(
                _guarded(task), initial_delay=0,
                periodic_interval_max=interval, stop_on_exception=False)
        LOG.info('%(binary)s %(version)s started on host %(host)s, topic '
                 '%(topic)s', {'binary': self.binary,
                               'version': version.version_string(),
                               'host': self.host, 'topic': self.topic})

    def stop(self, graceful=True):
        # NOTE(service): stop taking new messages first, then let the ones
        # in flight finish before the periodic tasks and the manager stop.
        if self.rpcserver is not None:
            try:
                self.rpcserver.stop()
                self.rpcserver.wait()
            except Exception:  # noqa: BLE001 - shutting down anyway
                LOG.exception('Error stopping the RPC server of %s',
                              self.binary)
        super().stop(graceful=graceful)
        del_host = getattr(self.manager, 'del_host', None)
        if del_host is not None:
            del_host()
        LOG.info('%s stopped on host %s', self.binary, self.host)


def _guarded(task):
    """Keep a periodic task alive whatever one of its runs raises."""

    def run():
        try:
            return task()
        except Exception:  # noqa: BLE001 - logged, next run retries
            LOG.exception('Periodic task %s failed',
                          getattr(task, '__name__', task))
            return None
    run.__name__ = getattr(task, '__name__', 'task')
    return run


#: Connections the kernel queues for a WSGI server before it refuses
#: more. NOTE(service): cheroot's default of 5 refuses connections as soon
#: as a few dozen clients connect at once (every agent of a booting rack).
LISTEN_BACKLOG = 128


class WSGIService(service.Service):
    """Serves a WSGI application with cheroot's thread-pool HTTP server.

    :param reuse_port: share the port with other processes that set it too
        (SO_REUSEPORT); the kernel spreads connections between them.
    """

    def __init__(self, name, app, host, port, threads,
                 option='[api] host_ip/port', reuse_port=False):
        super().__init__()
        self.name = name
        self.option = option
        self.server = wsgi.Server((host, port), app, numthreads=threads,
                                  server_name=name,
                                  request_queue_size=LISTEN_BACKLOG,
                                  reuse_port=reuse_port)
        self._thread = None

    @property
    def url(self):
        host, port = self.server.bind_addr[:2]
        if ':' in host:
            host = '[%s]' % host
        return 'http://%s:%s' % (host, port)

    def start(self):
        super().start()
        try:
            self.server.prepare()
        except OSError as exc:
            raise exception.ConfigError(
                option=self.option,
                reason='cannot listen on %s:%s (%s)' % (
                    self.server.bind_addr[0], self.server.bind_addr[1],
                    exc.strerror or exc)) from exc
        self._thread = threading.Thread(target=self.server.serve,
                                        name=self.name, daemon=True)
        self._thread.start()

    def stop(self, graceful=True):
        # NOTE(service): cheroot finishes the requests in progress before
        # stop() returns (up to its shutdown timeout).
        self.server.stop()
        super().stop(graceful=graceful)

    def wait(self):
        if self._thread is not None:
            self._thread.join()


def run(*services, on_started=None):
    """Run services in this process until SIGTERM or SIGINT.

    Start-up errors propagate to the caller (which prints one line and
    exits); SIGTERM and SIGINT stop every service gracefully; SIGHUP re-reads
    the mutable options of the configuration files; SIGUSR2 (or the file
    ``[oslo_reports] file_event_handler`` names) writes a Guru Meditation
    Report. Once every service started, systemd is told the process is
    ready (a unit of ``Type=notify``).
    """
    # NOTE(service): oslo.service's forking launcher would restart a worker
    # whose start fails in a loop and exits at once on SIGINT, so the
    # services run in the process that checked the configuration.
    stopping = threading.Event()
    # NOTE(service): set up first, so that a report can say where a start
    # that hangs (on a broker that does not answer) is waiting.
    _report_on_demand()
    started = []
    try:
        for svc in services:
            svc.start()
            started.append(svc)
    except BaseException:
        _stop_all(started)
        raise

    def on_stop(signo, _frame):
        LOG.info('Caught %s, stopping', signal.Signals(signo).name)
        stopping.set()

    def on_hup(_signo, _frame):
        LOG.info('Caught SIGHUP, reloading mutable options')
        CONF.mutate_config_files()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_hup)
    if on_started is not None:
        on_started()
    # NOTE(service): a no-op unless systemd started us with NOTIFY_SOCKET.
    systemd.notify_once()
    # NOTE(service): a timed wait, so the main thread runs signal handlers
    # promptly whatever the platform's lock behaviour.
    while not stopping.is_set():
        stopping.wait(0.5)
    _stop_all(started)


def _report_on_demand():
    """Write a Guru Meditation Report on SIGUSR2, or when the file
    ``[oslo_reports] file_event_handler`` names is touched."""
    try:
        gmr.TextGuruMeditation.setup_autorun(
            version, service_name=os.path.basename(sys.argv[0]), conf=CONF)
    except OSError as exc:
        raise exception.ConfigError(
            option='[oslo_reports] file_event_handler',
            reason='cannot watch %s: %s' % (
                CONF.oslo_reports.file_event_handler,
                exc.strerror or exc)) from exc


def _stop_all(services):
    for svc in reversed(services):
        try:
            svc.stop(graceful=True)
        except Exception:  # noqa: BLE001 - stop the others anyway
            LOG.exception('Error stopping %s', svc)
    for svc in reversed(services):
        svc.wait()
