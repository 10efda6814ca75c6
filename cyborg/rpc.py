"""oslo.messaging transport, RPC clients and servers (threading executor)."""

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher

from cyborg import context as cyborg_context
from cyborg.objects import base as objects_base

CONF = cfg.CONF

_TRANSPORT = None
_NOTIFICATION_TRANSPORT = None

# NOTE(rpc): exceptions from these modules are rebuilt on the caller's side,
# so a DeviceNotFound raised in the conductor is a 404 in the API, not a 500.
ALLOWED_EXMODS = ['cyborg.exception']


def init(conf):
    """Create the process's transports; safe to call more than once."""
    global _TRANSPORT, _NOTIFICATION_TRANSPORT
    if _TRANSPORT is None:
        _TRANSPORT = messaging.get_rpc_transport(
            conf, allowed_remote_exmods=ALLOWED_EXMODS)
    if _NOTIFICATION_TRANSPORT is None:
        _NOTIFICATION_TRANSPORT = messaging.get_notification_transport(
            conf, allowed_remote_exmods=ALLOWED_EXMODS)


def cleanup():
    global _TRANSPORT, _NOTIFICATION_TRANSPORT
    for transport in (_TRANSPORT, _NOTIFICATION_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    _TRANSPORT = _NOTIFICATION_TRANSPORT = None


def set_defaults(control_exchange='cyborg'):
    messaging.set_transport_defaults(control_exchange)


def register_opts(conf):
    """Register [DEFAULT] transport_url now rather than on first use."""
    # NOTE(rpc): oslo.messaging registers its transport options when a URL
    # is first parsed; the embedded default and the tests override them
    # before any transport exists.
    messaging.TransportURL.parse(conf)


class RequestContextSerializer(messaging.Serializer):
    """Carries the request context and versioned objects over RPC."""

    def __init__(self, base=None):
        self._base = base

    def serialize_entity(self, context, entity):
        if not self._base:
            return entity
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        if not self._base:
            return entity
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return cyborg_context.RequestContext.from_dict(context)


def _serializer(object_versions=None):
    return RequestContextSerializer(
        objects_base.CyborgObjectSerializer(object_versions))


def get_client(target, version_cap=None, object_versions=None,
               timeout=None, retry=None):
    """An RPC client that sends at most ``version_cap`` and, where given,
    objects backported to ``object_versions`` (name -> version).

    ``timeout`` and ``retry`` are the defaults of its calls (None: the
    transport's rpc_response_timeout, and reconnecting forever).
    """
    if _TRANSPORT is None:
        raise RuntimeError('cyborg.rpc.init() was not called')
    return messaging.get_rpc_client(_TRANSPORT, target,
                                    version_cap=version_cap,
                                    serializer=_serializer(object_versions),
                                    timeout=timeout, retry=retry)


def get_server(target, endpoints):
    if _TRANSPORT is None:
        raise RuntimeError('cyborg.rpc.init() was not called')
    access_policy = dispatcher.DefaultRPCAccessPolicy
    return messaging.get_rpc_server(_TRANSPORT, target, endpoints,
                                    executor='threading',
                                    serializer=_serializer(),
                                    access_policy=access_policy)
