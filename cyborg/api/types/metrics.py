"""A device's latest telemetry sample as the API shows it (2.6)."""

import datetime

import wsme.types as wtypes

from cyborg.api.types import base


class DeviceMetrics(wtypes.Base):
    """``GET /v2/devices/{uuid}/metrics``: one sample, never stored."""

    uuid = wtypes.text
    hostname = wtypes.text
    sampled_at = datetime.datetime
    health = wtypes.text
    metrics = {wtypes.text: float}

    _wsme_attr_order = ('uuid', 'hostname', 'sampled_at', 'health',
                        'metrics')

    @classmethod
    def from_sample(cls, sample: dict) -> 'DeviceMetrics':
        """The view of what the conductor relayed from the agent."""
        return cls(uuid=sample['uuid'], hostname=sample['hostname'],
                   sampled_at=base.timestamp(datetime.datetime.fromisoformat(
                       sample['sampled_at'])),
                   health=sample['health'],
                   metrics=dict(sample.get('metrics') or {}))
