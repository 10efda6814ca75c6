"""The Conductor resource: one cyborg-conductor, its liveness and clock."""

import wsme.types as wtypes

from cyborg.api.types import base


class Conductor(wtypes.Base):
    """A conductor as its heartbeats describe it."""

    host = wtypes.text
    status = wtypes.text
    last_heartbeat = wtypes.wsattr(base.datetime.datetime, readonly=True)
    version = wtypes.text
    rpc_version = wtypes.text
    clock_skew = float

    _wsme_attr_order = ('host', 'status', 'last_heartbeat', 'version',
                        'rpc_version', 'clock_skew')

    @classmethod
    def from_object(cls, service):
        skew = service.clock_skew if service.obj_attr_is_set(
            'clock_skew') else None
        return cls(host=service.host,
                   status='up' if service.is_up else 'down',
                   last_heartbeat=base.timestamp(service.last_seen_up),
                   version=service.version, rpc_version=service.rpc_version,
                   clock_skew=skew)


class ConductorCollection(wtypes.Base):
    """``{"conductors": [...]}``."""

    conductors = [Conductor]

    @classmethod
    def from_objects(cls, services):
        return cls(conductors=[Conductor.from_object(s) for s in services])
