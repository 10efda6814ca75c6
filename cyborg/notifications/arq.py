"""Accelerator request notifications: create, bind, unbind, delete."""

import typing

from oslo_versionedobjects import fields

from cyborg import states
from cyborg.notifications import base
from cyborg.objects import base as objects_base

OBJECT = 'arq'


@objects_base.CyborgObjectRegistry.register
class ArqPayload(base.NotificationPayloadBase):
    """An accelerator request as notifications describe it."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    SOURCE_FIELDS = ('uuid', 'state', 'device_profile_name',
                     'device_profile_group_id', 'hostname', 'device_rp_uuid',
                     'instance_uuid', 'project_id', 'attach_handle_type',
                     'attach_handle_uuid')

    fields = {
        'uuid': fields.UUIDField(nullable=False),
        'state': fields.StringField(nullable=True),
        'device_profile_name': fields.StringField(nullable=True),
        'device_profile_group_id': fields.IntegerField(nullable=True),
        'hostname': fields.StringField(nullable=True),
        'device_rp_uuid': fields.StringField(nullable=True),
        'instance_uuid': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'attach_handle_type': fields.StringField(nullable=True),
        'attach_handle_uuid': fields.StringField(nullable=True),
    }


@objects_base.CyborgObjectRegistry.register
class ArqNotification(base.NotificationBase):
    """accelerator.arq.create, .bind.{start,end,error}, .unbind, .delete."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('ArqPayload')}


def _emit(context, action, arqs, phase=None, priority=base.INFO, **values):
    for arq in base.resolve(arqs):
        base.notify(context, ArqNotification, OBJECT, action,
                    ArqPayload.from_source(arq, **values), phase=phase,
                    priority=priority)


@base.guarded
def created(context: typing.Any, arqs: typing.Any) -> None:
    """accelerator.arq.create of each of ``arqs`` (AcceleratorRequest
    objects, or a function returning them)."""
    _emit(context, 'create', arqs)


@base.guarded
def bind_started(context: typing.Any, arqs: typing.Any) -> None:
    """accelerator.arq.bind.start: the ARQs are BindStarted."""
    _emit(context, 'bind', arqs, phase=base.START)


@base.guarded
def bind_ended(context: typing.Any, arqs: typing.Any, ok: bool) -> None:
    """accelerator.arq.bind.end (Bound), or .bind.error at priority error
    (BindFailed: no free handle, or the host-side work failed)."""
    if ok:
        _emit(context, 'bind', arqs, phase=base.END)
    else:
        _emit(context, 'bind', arqs, phase=base.ERROR, priority=base.ERROR)


@base.guarded
def unbound(context: typing.Any, arqs: typing.Any) -> None:
    """accelerator.arq.unbind: ``arqs`` as they were bound; the payload's
    state says Unbound."""
    _emit(context, 'unbind', arqs, state=states.ARQ_UNBOUND)


@base.guarded
def deleted(context: typing.Any, arqs: typing.Any) -> None:
    """accelerator.arq.delete: ``arqs`` as they were before."""
    _emit(context, 'delete', arqs)
