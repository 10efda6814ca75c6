"""The Agent resource: one cyborg-agent and its liveness."""

import wsme.types as wtypes

from cyborg.api.types import base


class Agent(wtypes.Base):
    """An agent as its heartbeats describe it."""

    host = wtypes.text
    status = wtypes.text
    last_heartbeat = wtypes.wsattr(base.datetime.datetime, readonly=True)
    drivers = [wtypes.text]
    version = wtypes.text
    report_interval = int

    _wsme_attr_order = ('host', 'status', 'last_heartbeat', 'drivers',
                        'version', 'report_interval')

    @classmethod
    def from_object(cls, service):
        return cls(host=service.host,
                   status='up' if service.is_up else 'down',
                   last_heartbeat=base.timestamp(service.last_seen_up),
                   drivers=list(service.drivers), version=service.version,
                   report_interval=service.report_interval)


class AgentCollection(wtypes.Base):
    """``{"agents": [...]}``."""

    agents = [Agent]

    @classmethod
    def from_objects(cls, services):
        return cls(agents=[Agent.from_object(s) for s in services])
