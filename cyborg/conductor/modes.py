"""Partition modes: switch a device's mode through its agent, safely."""

# NOTE(modes): the device is held in maintenance (no bind reaches it)
# from the check that nothing is bound to it until its agent has
# reshaped Placement and reported the new deployables; the agent does
# the reshape in one POST /reshaper, so Placement never shows both
# arrangements, nor neither. A failed switch leaves the device as it
# was, in its old mode and status.

import json

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import exception
from cyborg import states
from cyborg.conductor import claims
from cyborg.conductor import lifecycle
from cyborg.db import api as dbapi
from cyborg.db import modes as mode_db
from cyborg.notifications import device as device_notifications

LOG = logging.getLogger(__name__)

#: What the agent's refusals are relayed as, naming the device by its
#: uuid (the agent names it by its PCI address).
_RELAYED = (exception.DeviceModeNotOffered, exception.DeviceHoldsVgpus,
            exception.DeviceModeSwitchFailed)


def _address(context, device):
    cpid = dbapi.controlpath_ids.list(context,
                                      filters={'device_id': device.id})[0]
    info = json.loads(cpid.cpid_info)
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info


def set_mode(context, uuid, mode, agent_api, owner=None):
    """Switch a device to ``mode`` (one of its ``modes``), the device
    claimed by conductor ``owner`` meanwhile.

    :returns: the device row, in its new mode.
    :raises DeviceNotFound, DeviceModeNotOffered, DeviceStateConflict.
    :raises DeviceClaimed: another workflow holds the device.
    :raises DeviceModeInUse: ARQs are bound to it (the message lists them).
    :raises DeviceHoldsVgpus: mediated devices are left on it (listed).
    :raises DeviceModeSwitchFailed: the agent could not switch; nothing
        changed.
    :raises AgentUnavailable: the agent did not answer; nothing changed
        that a later switch cannot finish.
    """
    with claims.held(context, uuid, claims.MODE_SWITCH, owner):
        return _switch(context, uuid, mode, agent_api)


def _switch(context, uuid, mode, agent_api):
    device, previous = mode_db.start(context, uuid, mode)
    if previous is None:
        return device
    if previous[0] != states.DEVICE_MAINTAINING:
        device_notifications.status_changed(
            context, lambda: dbapi.devices.get(context, uuid), previous[0],
            states.DEVICE_MAINTAINING, mode_db.reason_for(mode, previous[0]))
    LOG.info('Device %s on %s: changing its mode from %s to %s', uuid,
             device.hostname, device.mode, mode)
    # NOTE(modes): reserved in Placement too, so that Nova's scheduler
    # does not pick it meanwhile.
    lifecycle.tell_agent(context, device, agent_api)
    try:
        agent_api.set_device_mode(context, device.hostname,
                                  device.driver_name,
                                  _address(context, device), mode)
    except _RELAYED as exc:
        _finish(context, uuid, previous, agent_api)
        kind = next(cls for cls in _RELAYED if isinstance(exc, cls))
        raise kind(**dict(exc.kwargs, uuid=uuid)) from exc
    except exception.CyborgException as exc:
        _finish(context, uuid, previous, agent_api)
        raise exception.DeviceModeSwitchFailed(
            uuid=uuid, mode=mode, reason=exception.message_of(exc)) from exc
    except messaging.MessagingException as exc:
        _finish(context, uuid, previous, agent_api)
        raise exception.AgentUnavailable(
            host=device.hostname, reason=type(exc).__name__) from exc
    _finish(context, uuid, previous, agent_api)
    found = dbapi.devices.get(context, uuid)
    LOG.info('Device %s on %s is in mode %s', uuid, found.hostname,
             found.mode)
    return found


def _finish(context, uuid, previous, agent_api):
    """The device back in its status, in the database and Placement."""
    if mode_db.finish(context, uuid, previous):
        device = dbapi.devices.get(context, uuid)
        if previous[0] != states.DEVICE_MAINTAINING:
            device_notifications.status_changed(
                context, device, states.DEVICE_MAINTAINING, previous[0],
                previous[1])
        lifecycle.tell_agent(context, device, agent_api)
