"""Driver notifications: install, update and uninstall on an agent."""

import typing

from oslo_versionedobjects import fields

from cyborg.notifications import base
from cyborg.objects import base as objects_base

OBJECT = 'driver'
ACTIONS = ('install', 'update', 'uninstall')


@objects_base.CyborgObjectRegistry.register
class DriverPayload(base.NotificationPayloadBase):
    """A driver operation on one agent's host.

    ``name`` is the driver as the operator named it, ``driver_name`` as its
    devices report it once known; ``changed_devices`` (update) the devices
    whose description changed; ``reason`` why it failed (error phase).
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

    SOURCE_FIELDS = ('host', 'name', 'driver_name', 'enabled')

    fields = {
        'host': fields.StringField(nullable=False),
        'name': fields.StringField(nullable=False),
        'driver_name': fields.StringField(nullable=True),
        'enabled': fields.BooleanField(nullable=True),
        'image_id': fields.StringField(nullable=True),
        'changed_devices': fields.ListOfStringsField(nullable=False,
                                                     default=[]),
        'reason': fields.StringField(nullable=True),
    }


@objects_base.CyborgObjectRegistry.register
class DriverNotification(base.NotificationBase):
    """accelerator.driver.<install|update|uninstall>.<start|end|error>."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('DriverPayload')}


def _emit(context, action, phase, host, name, entry, **values):
    source = dict(entry or {}, host=host)
    source.setdefault('name', name)
    priority = base.ERROR if phase == base.ERROR else base.INFO
    base.notify(context, DriverNotification, OBJECT, action,
                DriverPayload.from_source(source, **values), phase=phase,
                priority=priority)


@base.guarded
def started(context: typing.Any, action: str, host: str, name: str,
            image_id: str | None = None) -> None:
    """accelerator.driver.<action>.start, before the agent is asked."""
    _emit(context, action, base.START, host, name, None, image_id=image_id)


@base.guarded
def ended(context: typing.Any, action: str, host: str, name: str,
          entry: typing.Any = None, image_id: str | None = None) -> None:
    """accelerator.driver.<action>.end; ``entry``: the driver's entry as
    the conductor records it now (``changes`` after an update), or a
    function returning it."""
    entry = base.resolve(entry)
    changes = (entry or {}).get('changes') or {}
    changed = sorted(set().union(*changes.values())) if changes else []
    _emit(context, action, base.END, host, name, entry, image_id=image_id,
          changed_devices=changed)


@base.guarded
def failed(context: typing.Any, action: str, host: str, name: str,
           reason: str, image_id: str | None = None) -> None:
    """accelerator.driver.<action>.error, at priority error."""
    _emit(context, action, base.ERROR, host, name, None, image_id=image_id,
          reason=str(reason)[:255])
