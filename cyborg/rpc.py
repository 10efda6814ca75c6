"""oslo.messaging transport, RPC clients and servers (threading executor)."""

import functools
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher

from cyborg import context as cyborg_context
from cyborg import deadline
from cyborg import exception
from cyborg.objects import base as objects_base

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

_TRANSPORT = None
_NOTIFICATION_TRANSPORT = None
_REPLIES = None

#: A topic nothing listens on: the reply queue's probe goes there.
PROBE_TOPIC = 'cyborg-reply-probe'
#: Seconds the probe waits for its (never coming) answer.
PROBE_TIMEOUT = 0.05
#: Seconds between two probes that failed otherwise than by a timeout.
PROBE_INTERVAL = 1.0

# NOTE(rpc): exceptions from these modules are rebuilt on the caller's side,
# so a DeviceNotFound raised in the conductor is a 404 in the API, not a 500.
ALLOWED_EXMODS = ['cyborg.exception']


#: Seconds an RPC server drops every reply to a reply queue it once found
#: missing (oslo.messaging's ObsoleteReplyQueuesCache.TTL, 60).
OBSOLETE_REPLY_TTL = 2
#: Seconds a call must have left to be sent again past a silent conductor
#: (a round trip on a loaded broker takes more).
LEAST_TO_RESEND = 0.1


def _short_obsolete_replies():
    """Forget a missing reply queue after OBSOLETE_REPLY_TTL seconds.

    NOTE(rpc): a server that cannot send a reply for
    ``kombu_missing_consumer_retry_timeout`` (60 s) takes its caller's
    reply queue for gone and drops every later reply to it for another
    minute, so that replies to a dead client do not each hold a pooled
    connection that long. A reply pending when RabbitMQ went down gives
    up about when a minute's outage ends, before the callers have
    declared their reply queues again: each conductor that held one then
    dropped every answer to the API for a minute after the broker was
    back. Replies to a client that is really gone are those of the calls
    it had in flight, which all began their wait before the first gave
    up: a short memory costs nothing there. The cache's lifetime is a
    class constant of oslo.messaging's AMQP driver; left alone where a
    release lacks it.
    """
    try:
        from oslo_messaging._drivers import amqpdriver
    except ImportError:
        return
    cache = getattr(amqpdriver, 'ObsoleteReplyQueuesCache', None)
    if cache is not None and isinstance(getattr(cache, 'TTL', None), int):
        cache.TTL = OBSOLETE_REPLY_TTL


def init(conf):
    """Create the process's transports; safe to call more than once."""
    global _TRANSPORT, _NOTIFICATION_TRANSPORT
    if _TRANSPORT is None:
        _short_obsolete_replies()
        _TRANSPORT = messaging.get_rpc_transport(
            conf, allowed_remote_exmods=ALLOWED_EXMODS)
        _rabbit_defaults(conf)
    if _NOTIFICATION_TRANSPORT is None:
        _NOTIFICATION_TRANSPORT = messaging.get_notification_transport(
            conf, allowed_remote_exmods=ALLOWED_EXMODS)


#: oslo.messaging's RabbitMQ options whose defaults Cyborg's services
#: change; a configuration file still sets them.
RABBIT_DEFAULTS = {
    # NOTE(rpc): RabbitMQ hands a topic's calls to its consumers in turn,
    # as many as each takes unacknowledged (unlimited by default). A
    # conductor that hangs without dying (SIGSTOP, swapped out, stuck in
    # the kernel) keeps its connection, so every call dealt to it waited
    # out the caller's timeout: a third of all calls with three
    # conductors. Taking one message at a time leaves one call with it.
    'rabbit_qos_prefetch_count': 1,
    # NOTE(rpc): reconnections back off up to this many seconds; with
    # oslo.messaging's 30, a broker back after a minute's outage waited
    # up to 30 s more for each service to notice.
    'rabbit_interval_max': 4,
}


def _rabbit_defaults(conf):
    """Apply RABBIT_DEFAULTS once the driver registered its options."""
    for name, value in RABBIT_DEFAULTS.items():
        try:
            conf.set_default(name, value, group='oslo_messaging_rabbit')
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            # NOTE(rpc): another driver (the in-process one of the
            # embedded default): nothing to tune.
            return


def notification_transport():
    """The notification transport ``init`` made, or None before it."""
    return _NOTIFICATION_TRANSPORT


def cleanup():
    global _TRANSPORT, _NOTIFICATION_TRANSPORT, _REPLIES
    for transport in (_TRANSPORT, _NOTIFICATION_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    _TRANSPORT = _NOTIFICATION_TRANSPORT = _REPLIES = None


def set_defaults(control_exchange='cyborg'):
    messaging.set_transport_defaults(control_exchange)


def register_opts(conf):
    """Register [DEFAULT] transport_url now rather than on first use."""
    # NOTE(rpc): oslo.messaging registers its transport options when a URL
    # is first parsed; the embedded default and the tests override them
    # before any transport exists.
    messaging.TransportURL.parse(conf)


class _Calling:
    """A request context on its way out in a call that waits ``timeout``
    seconds: the serializer stamps the call's deadline on what it sends."""

    __slots__ = ('context', 'timeout')

    def __init__(self, context, timeout):
        self.context = context
        self.timeout = timeout


def _unwrapped(context):
    return context.context if isinstance(context, _Calling) else context


class RequestContextSerializer(messaging.Serializer):
    """Carries the request context and versioned objects over RPC; a
    call's context carries its deadline (see ``cyborg.deadline``)."""

    def __init__(self, base=None):
        self._base = base

    def serialize_entity(self, context, entity):
        if not self._base:
            return entity
        return self._base.serialize_entity(_unwrapped(context), entity)

    def deserialize_entity(self, context, entity):
        if not self._base:
            return entity
        return self._base.deserialize_entity(_unwrapped(context), entity)

    def serialize_context(self, context):
        if isinstance(context, _Calling):
            return deadline.stamp(context.context.to_dict(), context.timeout)
        return context.to_dict()

    def deserialize_context(self, context):
        found = cyborg_context.RequestContext.from_dict(context)
        found.deadline = deadline.received(context)
        return found


def _serializer(object_versions=None):
    return RequestContextSerializer(
        objects_base.CyborgObjectSerializer(object_versions))


class ReplyQueue:
    """Sets up the transport's reply queue off the request path.

    NOTE(rpc): oslo.messaging creates the connection a process receives
    its RPC answers on at its first call, under a lock and with unlimited
    reconnections: if the broker cannot be reached then, that call and
    every later one wait until it can, whatever their timeout and retry
    say. A thread of its own makes that first call here (to a topic no
    one listens on), so that a call waits for it at most as long as its
    caller allows. Once made, the queue is kept and reconnected by
    oslo.messaging's own thread; calls never wait for it again.
    """

    def __init__(self, transport):
        self._transport = transport
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    def wait(self, timeout):
        """Whether the reply queue is set up within ``timeout`` seconds."""
        if self._ready.is_set():
            return True
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._probe, name='rpc-reply-queue', daemon=True)
                self._thread.start()
        return self._ready.wait(timeout)

    def _probe(self):
        client = messaging.get_rpc_client(
            self._transport, messaging.Target(topic=PROBE_TOPIC),
            timeout=PROBE_TIMEOUT, retry=0)
        while True:
            try:
                client.call({}, 'probe')
            except (messaging.MessagingTimeout,
                    messaging.MessageDeliveryFailure):
                # NOTE(rpc): either comes after the reply queue was made:
                # nothing answers the probe, or the broker went away again
                # (later calls fail at once, by their own retry).
                break
            except Exception as exc:  # noqa: BLE001 - try again, quietly
                LOG.debug('The reply queue is not set up yet: %s', exc)
                time.sleep(PROBE_INTERVAL)
                continue
            break
        LOG.debug('The RPC reply queue is set up.')
        self._ready.set()


def reply_queue():
    """This process's ReplyQueue (of its current transport)."""
    global _REPLIES
    if _TRANSPORT is None:
        raise RuntimeError('cyborg.rpc.init() was not called')
    if _REPLIES is None:
        _REPLIES = ReplyQueue(_TRANSPORT)
    return _REPLIES


class _GatedCall:
    """A call context whose calls carry their deadline and, with
    ``replies``, wait for the reply queue first; with ``monitor``, a call
    ``resend(method, kwargs)`` allows is sent again when its conductor
    stays silent that long (see _monitored)."""

    def __init__(self, context, replies, wait, monitor=0, resend=None):
        self._context = context
        self._replies = replies
        self._wait = wait
        self._monitor = monitor
        self._resend = resend

    def call(self, ctxt, method, **kwargs):
        if self._replies is not None and not self._replies.wait(self._wait):
            raise messaging.MessageDeliveryFailure(
                'the message broker has not been reached since this '
                'process started')
        if not isinstance(ctxt, cyborg_context.RequestContext):
            return self._context.call(ctxt, method, **kwargs)
        # NOTE(rpc): stamped only now, after the wait for the reply queue:
        # the call's own timeout starts at its send.
        timeout = self._context.timeout
        if timeout is None:
            timeout = self._context.conf.rpc_response_timeout
        if self._monitor and self._resend and self._resend(method, kwargs):
            return self._monitored(ctxt, method, timeout, kwargs)
        return self._context.call(_Calling(ctxt, timeout), method, **kwargs)

    def _monitored(self, ctxt, method, timeout, kwargs):
        """Send a call that may run twice until a conductor answers it,
        within ``timeout``.

        NOTE(rpc): RabbitMQ deals a call to one conductor; one that stopped
        without closing its connection (SIGSTOP, a hung host) keeps it
        unanswered. Its silence (no answer, no call monitor heartbeat)
        tells the stopped one apart from a slow one within ``monitor``
        seconds; the call is sent again and another conductor takes it.
        Each send carries the deadline left, so the stopped one drops its
        copy should it wake after it.
        """
        monitor = max(2, self._monitor)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            watched = left > monitor
            context = self._context.prepare(
                timeout=left,
                call_monitor_timeout=monitor if watched else None)
            try:
                return context.call(_Calling(ctxt, left), method, **kwargs)
            except messaging.MessagingTimeout:
                # NOTE(rpc): a conductor that says it is working keeps the
                # call until the whole timeout ran out: no time is left to
                # send it again in (a send with none fails in the driver,
                # as though the broker were gone).
                if not watched or end - time.monotonic() < LEAST_TO_RESEND:
                    raise
                LOG.info('No conductor answered or took up %s within %d s; '
                         'sending it again (%.1f s left)', method, monitor,
                         end - time.monotonic())

    def prepare(self, *args, **kwargs):
        return _GatedCall(self._context.prepare(*args, **kwargs),
                          self._replies, self._wait, self._monitor,
                          self._resend)

    def __getattr__(self, name):
        return getattr(self._context, name)


def get_client(target, version_cap=None, object_versions=None,
               timeout=None, retry=None, reply_wait=None, monitor=0,
               resend=None):
    """An RPC client that sends at most ``version_cap`` and, where given,
    objects backported to ``object_versions`` (name -> version).

    ``timeout`` and ``retry`` are the defaults of its calls (None: the
    transport's rpc_response_timeout, and reconnecting forever).
    ``reply_wait``: seconds a call waits, at most, for the process's reply
    queue to be set up (see ReplyQueue) before it raises
    MessageDeliveryFailure; None: as long as oslo.messaging takes.
    ``monitor``: seconds of a server's silence after which a call that
    ``resend(method, kwargs)`` says may run twice (a read, an idempotent
    write) is sent again within its timeout; 0: never.
    Each call's context carries the call's deadline (cyborg.deadline).
    """
    if _TRANSPORT is None:
        raise RuntimeError('cyborg.rpc.init() was not called')
    client = messaging.get_rpc_client(
        _TRANSPORT, target, version_cap=version_cap,
        serializer=_serializer(object_versions), timeout=timeout,
        retry=retry)
    replies = None if reply_wait is None else reply_queue()
    return _GatedCall(client, replies, reply_wait, monitor, resend)


class _Deadlined:
    """An RPC endpoint that drops a call whose caller stopped waiting
    before the endpoint's method runs (``cyborg.deadline``).

    The dispatcher finds methods and the ``target`` by attribute, as it
    does on the endpoint itself.
    """

    def __init__(self, endpoint):
        self._endpoint = endpoint
        self.target = getattr(endpoint, 'target', None)

    def __getattr__(self, name):
        found = getattr(self._endpoint, name)
        if name.startswith('_') or not callable(found):
            return found

        @functools.wraps(found)
        def checked(context, *args, **kwargs):
            try:
                deadline.check(context, 'RPC call %s' % name)
            except exception.DeadlineExceeded:
                # NOTE(rpc): logged once by check(); the dispatcher sends
                # it back (to nobody, most likely) without a traceback.
                raise messaging.ExpectedException() from None
            return found(context, *args, **kwargs)
        return checked


def get_server(target, endpoints):
    if _TRANSPORT is None:
        raise RuntimeError('cyborg.rpc.init() was not called')
    access_policy = dispatcher.DefaultRPCAccessPolicy
    return messaging.get_rpc_server(_TRANSPORT, target,
                                    [_Deadlined(e) for e in endpoints],
                                    executor='threading',
                                    serializer=_serializer(),
                                    access_policy=access_policy)
