"""The Device resource as the API shows it."""

import collections

import wsme.types as wtypes

from cyborg import states
from cyborg.api import microversion
from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'devices'

#: What a microversion shows of a device: how its status reads (None: not
#: shown) and whether the lifecycle fields (status_reason, services) are.
View = collections.namedtuple('View', 'status lifecycle')

#: Upstream's two values, which clients written for 2.3 compare against.
UPSTREAM_ENABLED = 'enabled'
UPSTREAM_MAINTAINING = 'maintaining'


def upstream_status(status):
    """A lifecycle status as 2.3 names it: enabled when ready, else
    maintaining (inactive, activating, error and lost devices cannot be
    scheduled either)."""
    if status == states.DEVICE_READY:
        return UPSTREAM_ENABLED
    return UPSTREAM_MAINTAINING


def _lifecycle_status(status):
    return status


VIEWS = microversion.ByVersion({
    '2.0': View(status=None, lifecycle=False),
    '2.3': View(status=upstream_status, lifecycle=False),
    '2.4': View(status=_lifecycle_status, lifecycle=True),
})


class Device(base.APIBase):
    """A physical accelerator card on one host."""

    uuid = wtypes.text
    type = wtypes.text
    vendor = wtypes.text
    model = wtypes.text
    std_board_info = wtypes.text
    vendor_board_info = wtypes.text
    hostname = wtypes.text
    status = wtypes.text
    status_reason = wtypes.text
    services = [wtypes.text]
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                        'vendor_board_info', 'hostname', 'status',
                        'status_reason', 'services', 'created_at',
                        'updated_at', 'links')

    _object_fields = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                     'vendor_board_info', 'hostname')

    @classmethod
    def from_object(cls, obj, view=None):
        """The view of a Device object at the request's microversion (or
        ``view``, one of ``VIEWS``); fields a version does not show are
        absent, not null."""
        view = VIEWS() if view is None else view
        extra = {'links': link.resource_links(RESOURCE, obj.uuid,
                                              bookmark=False)}
        if view.status is not None:
            extra['status'] = view.status(obj.status)
        if view.lifecycle:
            extra['status_reason'] = obj.status_reason
            extra['services'] = list(obj.services)
        return super().from_object(obj, **extra)


def list_body(rows, view=None):
    """The body ``DeviceCollection`` renders at the request's microversion
    (or ``view``), built from the rows of ``Device.list_view`` without a
    WSME object per device."""
    view = VIEWS() if view is None else view
    hidden = set()
    if view.status is None:
        hidden.add('status')
    if not view.lifecycle:
        hidden.update(('status_reason', 'services'))
    shown = [name for name in Device._wsme_attr_order[:-1]
             if name not in hidden]
    items = list(base.view_items(rows, shown, RESOURCE, bookmark=False))
    if view.status is not None:
        for item in items:
            item['status'] = view.status(item['status'])
    return {'devices': items}


class DeviceCollection(wtypes.Base):
    """``{"devices": [...]}``."""

    devices = [Device]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None, view=None):
        return base.with_next(
            cls(devices=[Device.from_object(obj, view) for obj in objs]),
            next_link)
