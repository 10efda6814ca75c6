"""FPGA programming notifications: a deployable loaded with an image."""

import typing

from oslo_versionedobjects import fields

from cyborg.notifications import base
from cyborg.objects import base as objects_base

OBJECT = 'deployable'


@objects_base.CyborgObjectRegistry.register
class ProgramPayload(base.NotificationPayloadBase):
    """A deployable being programmed with a Glance image.

    ``arq_uuid`` names the ARQ whose bind asked for it (None for an
    operator's PATCH); ``reason`` why it failed (error phase).
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'deployable_uuid': fields.UUIDField(nullable=False),
        'deployable_name': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'driver_name': fields.StringField(nullable=True),
        'image_id': fields.StringField(nullable=True),
        'previous_image_id': fields.StringField(nullable=True),
        'arq_uuid': fields.StringField(nullable=True),
        'reason': fields.StringField(nullable=True),
    }

    @classmethod
    def of_target(cls, target: dict, image_id: str,
                  **values) -> 'ProgramPayload':
        """The payload of a programming target (the conductor's
        ``program_target`` dict: uuid, name, host, driver_name,
        bitstream_id)."""
        return cls.from_source(
            {}, deployable_uuid=target['uuid'],
            deployable_name=target.get('name'), host=target.get('host'),
            driver_name=target.get('driver_name'), image_id=image_id,
            previous_image_id=target.get('bitstream_id'), **values)


@objects_base.CyborgObjectRegistry.register
class ProgramNotification(base.NotificationBase):
    """accelerator.deployable.program.<start|end|error>."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('ProgramPayload')}


def _emit(context, phase, target, image_id, priority=base.INFO, **values):
    base.notify(context, ProgramNotification, OBJECT, 'program',
                ProgramPayload.of_target(target, image_id, **values),
                phase=phase, priority=priority)


@base.guarded
def started(context: typing.Any, target: dict, image_id: str,
            arq_uuid: str | None = None) -> None:
    """accelerator.deployable.program.start, before the agent is asked."""
    _emit(context, base.START, target, image_id, arq_uuid=arq_uuid)


@base.guarded
def ended(context: typing.Any, target: dict, image_id: str,
          arq_uuid: str | None = None) -> None:
    """accelerator.deployable.program.end: the deployable holds the
    image."""
    _emit(context, base.END, target, image_id, arq_uuid=arq_uuid)


@base.guarded
def failed(context: typing.Any, target: dict, image_id: str, reason: str,
           arq_uuid: str | None = None) -> None:
    """accelerator.deployable.program.error, at priority error."""
    _emit(context, base.ERROR, target, image_id, priority=base.ERROR,
          arq_uuid=arq_uuid, reason=str(reason)[:255])
