"""Device lifecycle in the conductor: activation through the agent."""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import exception
from cyborg import states
from cyborg.conductor import claims
from cyborg.conductor import inventory
from cyborg.db import api as dbapi
from cyborg.db import device_health
from cyborg.db import devices as device_db
from cyborg.db import drains
from cyborg.notifications import device as device_notifications
from cyborg.notifications import maintenance as maintenance_notifications
from cyborg.objects import device as device_obj

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

ACTIVATION_FAILED = states.ACTIVATION_FAILED


def _swap(context, uuid, expected, status, reason=None):
    """``device_db.swap_status``, then the status_change notification."""
    swapped = device_db.swap_status(context, uuid, expected, status, reason)
    if swapped:
        device_notifications.status_changed(
            context, lambda: dbapi.devices.get(context, uuid), expected,
            status, reason)
    return swapped


def activate(context, uuid, agent_api, owner=None):
    """Run the driver's install step on the device's host; make it ready.
    The device is claimed by conductor ``owner`` meanwhile.

    :raises DeviceNotFound: no such device.
    :raises DeviceClaimed: another workflow holds the device.
    :raises DeviceStateConflict: the device is not inactive.
    :raises AgentUnavailable: the agent did not answer; the device stays
        inactive.
    """
    device = dbapi.devices.get(context, uuid)
    with claims.held(context, uuid, claims.ACTIVATE, owner):
        _activate(context, device, agent_api)
    return dbapi.devices.get(context, uuid)


def _activate(context, device, agent_api):
    uuid = device.uuid
    if not _swap(context, uuid, states.DEVICE_INACTIVE,
                 states.DEVICE_ACTIVATING):
        current = dbapi.devices.get(context, uuid)
        raise exception.DeviceStateConflict(
            uuid=uuid, status=current.status,
            expected=states.DEVICE_INACTIVE, action='activate')
    cpid = dbapi.controlpath_ids.list(context,
                                      filters={'device_id': device.id})[0]
    try:
        agent_api.install_device(context, device.hostname,
                                 device.driver_name, cpid.cpid_type,
                                 cpid.cpid_info)
    except exception.CyborgException as exc:
        LOG.warning('Activation of device %s failed: %s', uuid, exc)
        _swap(context, uuid, states.DEVICE_ACTIVATING, states.DEVICE_ERROR,
              (ACTIVATION_FAILED + exception.message_of(exc))[:255])
    except messaging.MessagingException as exc:
        _swap(context, uuid, states.DEVICE_ACTIVATING,
              states.DEVICE_INACTIVE)
        raise exception.AgentUnavailable(host=device.hostname,
                                         reason=type(exc).__name__) from exc
    else:
        _swap(context, uuid, states.DEVICE_ACTIVATING, states.DEVICE_READY)
        LOG.info('Device %s on %s is ready', uuid, device.hostname)


MAINTAINING_FROM = states.MAINTAINING_FROM


def disable(context, uuid):
    """Put a device in maintenance (upstream's disable, microversion 2.3).

    Idempotent. The status it leaves is kept in ``status_reason`` so that
    ``enable`` returns the device to it.
    """
    device = dbapi.devices.get(context, uuid)
    if device.status == states.DEVICE_MAINTAINING:
        return device
    # NOTE(lifecycle): a drain cut short was heading for maintenance from
    # ready, and enable returns it there.
    was = (states.DEVICE_READY if device.status == states.DEVICE_DRAINING
           else device.status)
    if device.status not in states.DEVICE_CAN_MAINTAIN or not _swap(
            context, uuid, device.status, states.DEVICE_MAINTAINING,
            MAINTAINING_FROM + was):
        current = dbapi.devices.get(context, uuid)
        raise exception.DeviceStateConflict(
            uuid=uuid, status=current.status,
            expected=' or '.join(states.DEVICE_CAN_MAINTAIN), action='disable')
    LOG.info('Device %s is in maintenance', uuid)
    return dbapi.devices.get(context, uuid)


def enable(context, uuid, agent_api, owner=None):
    """Make a device usable again (upstream's enable, microversion 2.3).

    It cancels a drain. From maintenance it returns to the status it had
    (ready, or inactive),
    and so does a device held in error by its health (failed or flapping);
    an inactive device is activated, so clients of the upstream API, where
    devices start usable, get a usable device. Idempotent on a ready one.
    """
    device = dbapi.devices.get(context, uuid)
    if device.status == states.DEVICE_READY:
        return device
    if device.status == states.DEVICE_DRAINING:
        if not _swap(context, uuid, states.DEVICE_DRAINING,
                     states.DEVICE_READY):
            raise exception.DeviceStateConflict(
                uuid=uuid, status=dbapi.devices.get(context, uuid).status,
                expected=states.DEVICE_DRAINING, action='enable')
        LOG.info('Drain of device %s cancelled; it is ready', uuid)
        device = dbapi.devices.get(context, uuid)
        maintenance_notifications.drain_ended(context, device,
                                              cancelled=True)
        return device
    back = device_health.release(context, uuid)
    if back is not None:
        LOG.warning('Device %s, held in error by its health (%s), is %s '
                    'again by an operator\'s enable', uuid,
                    device.status_reason, back)
        if back != states.DEVICE_INACTIVE:
            return dbapi.devices.get(context, uuid)
    elif device.status == states.DEVICE_MAINTAINING:
        reason = device.status_reason or ''
        back = (states.DEVICE_READY
                if reason == MAINTAINING_FROM + states.DEVICE_READY
                else states.DEVICE_INACTIVE)
        if not _swap(context, uuid, states.DEVICE_MAINTAINING, back):
            raise exception.DeviceStateConflict(
                uuid=uuid, status=dbapi.devices.get(context, uuid).status,
                expected=states.DEVICE_MAINTAINING, action='enable')
        if back == states.DEVICE_READY:
            return dbapi.devices.get(context, uuid)
    return activate(context, uuid, agent_api, owner)


def drain(context, uuid):
    """Take no new bind on a ready device; bound ARQs run on, and it is
    maintaining once the last one unbinds (``settle_drains``).

    :raises DeviceStateConflict: it is neither ready nor draining.
    """
    before = dbapi.devices.get(context, uuid)
    device = drains.start(context, uuid)
    if before.status == states.DEVICE_DRAINING:
        return device
    LOG.info('Device %s on %s: %s', uuid, device.hostname,
             device.status_reason)
    device = dbapi.devices.get(context, uuid)
    device_notifications.status_changed(context, device, before.status,
                                        device.status, device.status_reason)
    maintenance_notifications.drain_started(
        context, device, arqs_left=drains.left(device.status_reason))
    if device.status == states.DEVICE_MAINTAINING:
        maintenance_notifications.drain_ended(context, device)
    return device


def settle_drains(context):
    """Put in maintenance the draining devices with nothing bound."""
    for uuid, host in drains.settle(context):
        LOG.info('Device %s on %s is drained; it is in maintenance', uuid,
                 host)
        device = dbapi.devices.get(context, uuid)
        device_notifications.status_changed(
            context, device, states.DEVICE_DRAINING, device.status,
            device.status_reason)
        maintenance_notifications.drain_ended(context, device)


def recover_activations(context, older_than):
    """Put back to inactive the activations a dead conductor left behind."""
    count = device_db.reset_activations(context, older_than)
    if count:
        LOG.warning('%d device activations were interrupted; the devices '
                    'are inactive again', count)
    return count


def tell_agent(context, device, agent_api):
    """Send a device's status to its agent, which reserves or frees it in
    Placement. An agent that does not answer catches up when it next heals.
    """
    state = inventory.state_of(context, device.uuid)
    try:
        if agent_api.update_device_states(context, device.hostname,
                                          [state]) is False:
            LOG.warning('The agent of %s could not yet reserve or free '
                        'device %s (%s) in Placement; it retries on its own',
                        device.hostname, device.uuid, device.status)
    except (exception.CyborgException, messaging.MessagingException) as exc:
        LOG.warning('The agent of %s was not told that device %s is %s '
                    '(%s); it catches up at its next Placement heal',
                    device.hostname, device.uuid, device.status,
                    type(exc).__name__)


def changed(context, device, agent_api):
    """Have the device's agent reserve or free it in Placement; the
    ``Device`` object of the row."""
    tell_agent(context, device, agent_api)
    return device_obj.Device._from_db_object(
        device_obj.Device(context), device, context)
