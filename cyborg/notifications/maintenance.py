"""Drain and scrub notifications: a device emptied, a deployable cleaned.

The drain and scrub workflows call these helpers; they add nothing of
their own to the database.
"""

import typing

from oslo_versionedobjects import fields

from cyborg.notifications import base
from cyborg.notifications import device as device_notifications
from cyborg.objects import base as objects_base


@objects_base.CyborgObjectRegistry.register
class DrainPayload(device_notifications.DevicePayload):
    """A device being drained: ``arqs_left`` ARQs are still bound to it;
    ``cancelled`` when an operator's enable ended the drain."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'arqs_left': fields.IntegerField(nullable=False, default=0),
        'cancelled': fields.BooleanField(nullable=False, default=False),
    }


@objects_base.CyborgObjectRegistry.register
class DrainNotification(base.NotificationBase):
    """accelerator.device.drain.<start|end>."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('DrainPayload')}


@objects_base.CyborgObjectRegistry.register
class ScrubPayload(base.NotificationPayloadBase):
    """A deployable scrubbed after its last ARQ unbound: ``steps`` the
    scrub steps the driver ran (reset, mdev removal, reprogramming...);
    ``reason`` why it failed (error phase)."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'deployable_uuid': fields.UUIDField(nullable=False),
        'deployable_name': fields.StringField(nullable=True),
        'device_uuid': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'driver_name': fields.StringField(nullable=True),
        'steps': fields.ListOfStringsField(nullable=False, default=[]),
        'reason': fields.StringField(nullable=True),
    }

    @classmethod
    def of_deployable(cls, deployable: typing.Any,
                      **values) -> 'ScrubPayload':
        """The payload of a deployable (row, object or dict with uuid,
        name, driver_name and, where known, host and device_uuid)."""
        def read(name):
            if isinstance(deployable, dict):
                return deployable.get(name)
            return getattr(deployable, name, None)
        found = {'deployable_uuid': read('uuid'),
                 'deployable_name': read('name'),
                 'device_uuid': read('device_uuid'),
                 'host': read('host'), 'driver_name': read('driver_name')}
        found.update(values)
        return cls.from_source({}, **found)


@objects_base.CyborgObjectRegistry.register
class ScrubNotification(base.NotificationBase):
    """accelerator.deployable.scrub.<start|end|error>."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('ScrubPayload')}


def _drain(context, phase, device, **values):
    base.notify(context, DrainNotification, device_notifications.OBJECT,
                'drain', DrainPayload.from_source(base.resolve(device),
                                                  **values),
                phase=phase)


@base.guarded
def drain_started(context: typing.Any, device: typing.Any,
                  arqs_left: int) -> None:
    """accelerator.device.drain.start: no new bind is accepted; the
    device (row, object, dict or a function returning one) still has
    ``arqs_left`` bound ARQs."""
    _drain(context, base.START, device, arqs_left=arqs_left)


@base.guarded
def drain_ended(context: typing.Any, device: typing.Any,
                cancelled: bool = False) -> None:
    """accelerator.device.drain.end: the last ARQ unbound (the device is
    maintaining), or an operator cancelled the drain."""
    _drain(context, base.END, device, arqs_left=0, cancelled=cancelled)


def _scrub(context, phase, deployable, priority=base.INFO, **values):
    base.notify(context, ScrubNotification, 'deployable', 'scrub',
                ScrubPayload.of_deployable(base.resolve(deployable),
                                           **values),
                phase=phase, priority=priority)


@base.guarded
def scrub_started(context: typing.Any, deployable: typing.Any,
                  steps: typing.Iterable[str] = ()) -> None:
    """accelerator.deployable.scrub.start: the deployable is cleaning."""
    _scrub(context, base.START, deployable, steps=list(steps))


@base.guarded
def scrub_ended(context: typing.Any, deployable: typing.Any,
                steps: typing.Iterable[str] = ()) -> None:
    """accelerator.deployable.scrub.end: its capacity is returned."""
    _scrub(context, base.END, deployable, steps=list(steps))


@base.guarded
def scrub_failed(context: typing.Any, deployable: typing.Any, reason: str,
                 steps: typing.Iterable[str] = ()) -> None:
    """accelerator.deployable.scrub.error, at priority error: the device
    is failed."""
    _scrub(context, base.ERROR, deployable, priority=base.ERROR,
           steps=list(steps), reason=str(reason)[:255])
