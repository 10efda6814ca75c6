"""A device's telemetry, relayed from its agent; never stored."""

from oslo_log import log as logging

from cyborg import exception
from cyborg import states
from cyborg.conductor import agent_rpcapi
from cyborg.db import api as dbapi

LOG = logging.getLogger(__name__)


def device_metrics(context, uuid: str, agent_api, timeout: float) -> dict:
    """The latest sample of a device, asked of the agent of its host.

    :param timeout: seconds the agent has to answer.
    :returns: ``{'uuid', 'hostname', 'sampled_at', 'health',
        'health_reason', 'health_sources', 'metrics'}``.
    :raises DeviceNotFound: no such device.
    :raises DeviceMetricsUnavailable: the device is lost, or its agent did
        not find it in its last discovery.
    :raises AgentUnavailable: the agent did not answer within ``timeout``.
    """
    device = dbapi.devices.get(context, uuid)
    if device.status == states.DEVICE_LOST:
        raise exception.DeviceMetricsUnavailable(
            uuid=uuid, reason='it is lost: host %s no longer reports it'
            % device.hostname)
    cpid = dbapi.controlpath_ids.list(context,
                                      filters={'device_id': device.id})[0]
    try:
        sample = agent_rpcapi.reached(
            device.hostname, agent_api.device_metrics, context,
            device.hostname, [cpid.cpid_type, cpid.cpid_info], timeout)
    except exception.DeviceMetricsUnavailable as exc:
        # NOTE(telemetry): the agent knows the device by its control
        # path; the caller asked by uuid.
        raise exception.DeviceMetricsUnavailable(
            uuid=uuid, reason=exc.kwargs.get('reason') or str(exc)) from exc
    return dict(sample, uuid=uuid, hostname=device.hostname)
