"""The versioned notification envelope, its publisher, and the sender.

A notification is a ``NotificationBase`` object: its ``event_type``
(``accelerator.<object>.<action>[.<phase>]``), ``priority``, ``publisher``
(host and binary) and a versioned ``payload`` object. ``emit`` queues it;
one thread per process hands queued notifications to oslo.messaging's
Notifier, so that neither a slow broker nor a failing driver reaches the
operation that emitted them.
"""

import atexit
import functools
import queue
import threading
import typing

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_versionedobjects import fields as ovo_fields

from cyborg import rpc
from cyborg.objects import base as objects_base

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: The first word of every event type Cyborg sends.
PREFIX = 'accelerator'
CONDUCTOR = 'cyborg-conductor'
AGENT = 'cyborg-agent'

#: Priorities, named as oslo.messaging's Notifier methods are.
INFO = 'info'
WARN = 'warn'
ERROR = 'error'
PRIORITIES = ('audit', 'debug', INFO, WARN, ERROR, 'critical', 'sample')

#: Phases of an action that has a beginning and an end.
START = 'start'
END = 'end'
PHASES = (START, END, ERROR)


class PriorityField(ovo_fields.BaseEnumField):
    AUTO_TYPE = ovo_fields.Enum(valid_values=PRIORITIES)


class PhaseField(ovo_fields.BaseEnumField):
    AUTO_TYPE = ovo_fields.Enum(valid_values=PHASES)


class NotificationObject(objects_base.CyborgObject):
    """Base of notification objects: built, sent, never stored."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # NOTE(notifications): every field is sent, changed or not.
        self.obj_reset_changes(recursive=False)


@objects_base.CyborgObjectRegistry.register
class EventType(NotificationObject):
    """What happened: ``accelerator.<object>.<action>[.<phase>]``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'object': ovo_fields.StringField(nullable=False),
        'action': ovo_fields.StringField(nullable=False),
        'phase': PhaseField(nullable=True),
    }

    def to_event_type(self) -> str:
        parts = [PREFIX, self.object, self.action]
        if self.obj_attr_is_set('phase') and self.phase is not None:
            parts.append(self.phase)
        return '.'.join(parts)


@objects_base.CyborgObjectRegistry.register
class NotificationPublisher(NotificationObject):
    """Who sent it: a host and the binary running there."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'host': ovo_fields.StringField(nullable=False),
        'source': ovo_fields.StringField(nullable=False),
    }

    @property
    def publisher_id(self) -> str:
        return '%s:%s' % (self.source, self.host)


class NotificationPayloadBase(NotificationObject):
    """A payload whose fields are copied from whatever describes the
    resource: a versioned object, a database row or a dict."""

    #: Fields read from the source by their own name.
    SOURCE_FIELDS = ()

    @classmethod
    def from_source(cls, source: typing.Any, **values) -> 'typing.Self':
        """The payload of ``source``; ``values`` add to, or override, what
        is read from it. A field the source lacks is None."""
        payload = cls()
        for name in cls.SOURCE_FIELDS:
            if name not in values:
                values[name] = _read(source, name)
        for name, value in values.items():
            setattr(payload, name, value)
        payload.obj_reset_changes(recursive=False)
        return payload


def _read(source, name):
    if isinstance(source, dict):
        return source.get(name)
    return getattr(source, name, None)


class NotificationBase(NotificationObject):
    """The envelope; each subclass names its payload class."""

    fields = {
        'priority': PriorityField(nullable=False),
        'event_type': ovo_fields.ObjectField('EventType'),
        'publisher': ovo_fields.ObjectField('NotificationPublisher'),
    }

    def emit(self, context: typing.Any) -> None:
        """Queue this notification; never raises, never waits."""
        try:
            item = (context, self.publisher.publisher_id, self.priority,
                    self.event_type.to_event_type(),
                    self.payload.obj_to_primitive())
        except Exception:  # noqa: BLE001 - a notification must not fail
            LOG.exception('Could not build a %s notification',
                          self.obj_name())
            return
        SENDER.put(item)


def enabled() -> bool:
    """Whether this process sends versioned notifications now."""
    if CONF.notifications.notification_format != 'versioned':
        return False
    return SENDER.notifier() is not None


def notify(context: typing.Any, notification_cls: type, obj: str,
           action: str, payload: NotificationPayloadBase,
           phase: str | None = None, priority: str = INFO,
           source: str = CONDUCTOR, host: str | None = None) -> None:
    """Emit one notification; a no-op while notifications are off.

    Call it after the transaction that made the change committed.
    """
    try:
        notification = notification_cls(
            priority=priority,
            event_type=EventType(object=obj, action=action, phase=phase),
            publisher=NotificationPublisher(host=host or CONF.host,
                                            source=source),
            payload=payload)
    except Exception:  # noqa: BLE001 - a notification must not fail
        LOG.exception('Could not build the %s.%s notification', obj, action)
        return
    notification.emit(context)


def guarded(func: typing.Callable) -> typing.Callable:
    """Make an emit helper a no-op while notifications are off, and one
    that logs instead of raising whatever goes wrong."""
    @functools.wraps(func)
    def helper(*args, **kwargs):
        try:
            if not enabled():
                return
            func(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a notification must not fail
            LOG.exception('Could not emit the notification of %s',
                          func.__qualname__)
    return helper


def resolve(value: typing.Any) -> typing.Any:
    """``value``, or what it returns when it is a function: callers pass
    a loader where reading the resource costs a query, so that the query
    runs only while notifications are on."""
    return value() if callable(value) else value


def collect(loader: typing.Callable) -> list:
    """What ``loader`` returns, as a list, while notifications are on;
    [] while they are off or when it fails. For resources read before an
    action that removes them (the notification is sent after)."""
    try:
        if not enabled():
            return []
        return list(loader())
    except Exception as exc:  # noqa: BLE001 - the action reports it
        LOG.debug('Nothing to notify: %s', exc)
        return []


class _ContextSerializer(messaging.Serializer):
    """Payloads go as built (primitives); the context as a dict."""

    def serialize_entity(self, context, entity):
        return entity

    def deserialize_entity(self, context, entity):
        return entity

    def serialize_context(self, context):
        # NOTE(notifications): oslo.messaging hands over the redacted copy
        # of a request context, or {} for anything else.
        return context.to_dict() if hasattr(context, 'to_dict') else {}

    def deserialize_context(self, context):
        return context


class Sender:
    """Sends queued notifications from one thread of this process.

    The first failure after a success is logged as a warning; later ones,
    until the next success, only at debug level, so that an outage does
    not flood the log.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._queue = None
        self._thread = None
        self._notifier = None
        self._made_for = None
        self._failing = False
        self._dropping = False

    def notifier(self) -> messaging.Notifier | None:
        """The Notifier on this process's notification transport, or None
        when there is none or its driver sends nothing."""
        transport = rpc.notification_transport()
        if transport is None:
            return None
        with self._lock:
            # NOTE(notifications): get_notification_transport registered
            # the [oslo_messaging_notifications] options.
            drivers = tuple(CONF.oslo_messaging_notifications.driver)
            topics = tuple(CONF.notifications.versioned_notifications_topics)
            if self._made_for != (transport, drivers, topics):
                # NOTE(notifications): a Notifier loads its drivers once;
                # a new transport (after rpc.cleanup()) or changed options
                # need a new one.
                self._make(transport, drivers, topics)
            if not [name for name in drivers if name != 'noop']:
                return None
            return self._notifier

    def _make(self, transport, drivers, topics):
        self._notifier = messaging.Notifier(
            transport, serializer=_ContextSerializer(), topics=list(topics))
        self._made_for = (transport, drivers, topics)

    def put(self, item: tuple) -> None:
        with self._lock:
            if self._queue is None:
                self._queue = queue.Queue(CONF.notifications.max_queued)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name='notifications', daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(item)
            self._dropping = False
        except queue.Full:
            if not self._dropping:
                LOG.warning('%d notifications are waiting to be sent; '
                            'dropping %s and newer ones until some are '
                            'sent', self._queue.maxsize, item[3])
            self._dropping = True

    def _run(self):
        while True:
            item = self._queue.get()
            try:
                self._send(*item)
            finally:
                self._queue.task_done()

    def _send(self, context, publisher_id, priority, event_type, payload):
        try:
            notifier = self.notifier()
            if notifier is None:
                return
            send = getattr(notifier.prepare(publisher_id=publisher_id),
                           priority)
            send(context, event_type, payload)
        except Exception as exc:  # noqa: BLE001 - never reaches the caller
            if self._failing:
                LOG.debug('Could not send %s: %s', event_type, exc)
            else:
                LOG.warning('Could not send notification %s (%s); further '
                            'failures are logged at debug level until one '
                            'is sent', event_type, exc)
            self._failing = True
        else:
            if self._failing:
                LOG.info('Notifications are sent again')
            self._failing = False

    def flush(self, timeout: float = 10) -> bool:
        """Wait until every queued notification was handed over; whether
        they were within ``timeout`` seconds."""
        found = self._queue
        if found is None:
            return True
        with found.all_tasks_done:
            return found.all_tasks_done.wait_for(
                lambda: not found.unfinished_tasks, timeout)


#: The sender of this process.
SENDER = Sender()
#: Seconds a process that exits waits for its queued notifications.
EXIT_WAIT = 5


def flush(timeout: float = 10) -> bool:
    """See ``Sender.flush``."""
    return SENDER.flush(timeout)


# NOTE(notifications): the sender's thread is a daemon, so that a broker
# that does not answer never holds a stopping process; what was queued
# before the stop still goes, within EXIT_WAIT.
atexit.register(lambda: flush(EXIT_WAIT))
