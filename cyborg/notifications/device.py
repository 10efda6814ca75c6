"""Device notifications: created, updated, deleted, status and health."""

import typing

from oslo_config import cfg
from oslo_versionedobjects import fields

from cyborg.notifications import base
from cyborg.objects import base as objects_base

CONF = cfg.CONF

OBJECT = 'device'
#: Health values whose change is sent with a raised priority.
_HEALTH_PRIORITY = {'failed': base.ERROR, 'degraded': base.WARN}


@objects_base.CyborgObjectRegistry.register
class DevicePayload(base.NotificationPayloadBase):
    """A device as notifications describe it."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    SOURCE_FIELDS = ('uuid', 'type', 'vendor', 'model', 'hostname',
                     'driver_name', 'status', 'status_reason',
                     'std_board_info', 'vendor_board_info')

    fields = {
        'uuid': fields.UUIDField(nullable=False),
        'type': fields.StringField(nullable=True),
        'vendor': fields.StringField(nullable=True),
        'model': fields.StringField(nullable=True),
        'hostname': fields.StringField(nullable=True),
        'driver_name': fields.StringField(nullable=True),
        'status': fields.StringField(nullable=True),
        'status_reason': fields.StringField(nullable=True),
        'std_board_info': fields.StringField(nullable=True),
        'vendor_board_info': fields.StringField(nullable=True),
    }


@objects_base.CyborgObjectRegistry.register
class DeviceNotification(base.NotificationBase):
    """accelerator.device.create, .update and .delete."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('DevicePayload')}


@objects_base.CyborgObjectRegistry.register
class DeviceStatusPayload(DevicePayload):
    """A device whose status changed from ``old_status``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'old_status': fields.StringField(nullable=True)}


@objects_base.CyborgObjectRegistry.register
class DeviceStatusNotification(base.NotificationBase):
    """accelerator.device.status_change."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('DeviceStatusPayload')}


@objects_base.CyborgObjectRegistry.register
class DeviceHealthPayload(DevicePayload):
    """A device whose health changed, with the ARQs bound to it."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'health': fields.StringField(nullable=True),
        'old_health': fields.StringField(nullable=True),
        'health_reason': fields.StringField(nullable=True),
        'affected_arqs': fields.ListOfStringsField(nullable=False,
                                                   default=[]),
    }


@objects_base.CyborgObjectRegistry.register
class DeviceHealthNotification(base.NotificationBase):
    """accelerator.device.health_change."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('DeviceHealthPayload')}


def _emit(context, action, device, **values):
    base.notify(context, DeviceNotification, OBJECT, action,
                DevicePayload.from_source(base.resolve(device), **values))


@base.guarded
def created(context: typing.Any, device: typing.Any) -> None:
    """accelerator.device.create of a device row, object or dict."""
    _emit(context, 'create', device)


@base.guarded
def updated(context: typing.Any, device: typing.Any) -> None:
    """accelerator.device.update: what describes the device changed."""
    _emit(context, 'update', device)


@base.guarded
def deleted(context: typing.Any, device: typing.Any) -> None:
    """accelerator.device.delete: the device is gone from the database."""
    _emit(context, 'delete', device)


@base.guarded
def inventory_changed(context: typing.Any, created: typing.Iterable = (),
                      updated: typing.Iterable = (),
                      deleted: typing.Iterable = ()) -> None:
    """The create, update and delete notifications of an agent's report,
    unless ``[notifications] notify_on_inventory_change`` is off."""
    if not CONF.notifications.notify_on_inventory_change:
        return
    for action, devices in (('create', created), ('update', updated),
                            ('delete', deleted)):
        for device in devices:
            _emit(context, action, device)


@base.guarded
def status_changed(context: typing.Any, device: typing.Any, old: str,
                   new: str, reason: str | None = None) -> None:
    """accelerator.device.status_change from ``old`` to ``new``.

    :param device: the device (row, object, dict, or a function returning
        one); its status and reason are taken from ``new`` and ``reason``.
    """
    base.notify(context, DeviceStatusNotification, OBJECT, 'status_change',
                DeviceStatusPayload.from_source(
                    base.resolve(device), status=new, status_reason=reason,
                    old_status=old))


@base.guarded
def health_changed(context: typing.Any, device: typing.Any, old: str | None,
                   new: str, reason: str | None = None,
                   affected_arqs: typing.Iterable[str] = ()) -> None:
    """accelerator.device.health_change from ``old`` to ``new``.

    Sent at priority error when the device failed (its bound ARQs, in
    ``affected_arqs``, are to be evacuated), warn when it is degraded.
    """
    base.notify(context, DeviceHealthNotification, OBJECT, 'health_change',
                DeviceHealthPayload.from_source(
                    base.resolve(device), health=new, old_health=old,
                    health_reason=reason,
                    affected_arqs=sorted(affected_arqs)),
                priority=_HEALTH_PRIORITY.get(new, base.INFO))
