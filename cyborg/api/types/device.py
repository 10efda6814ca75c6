"""The Device resource as the API shows it."""


import wsme.types as wtypes

from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'devices'


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
    def from_object(cls, obj, with_status=False, with_lifecycle=False):
        """The view of a Device object.

        :param with_status: include ``status`` (microversion 2.3 and later);
            otherwise the field is absent, not null.
        :param with_lifecycle: include ``status_reason`` and ``services``
            (2.4 and later).
        """
        extra = {'links': link.resource_links(RESOURCE, obj.uuid,
                                              bookmark=False)}
        if with_status:
            extra['status'] = obj.status
        if with_lifecycle:
            extra['status_reason'] = obj.status_reason
            extra['services'] = list(obj.services)
        return super().from_object(obj, **extra)


def list_body(view, with_status=False, with_lifecycle=False):
    """The body ``DeviceCollection`` renders (the flags are those of
    ``Device.from_object``), built from the rows of ``Device.list_view``
    without a WSME object per device."""
    hidden = set()
    if not with_status:
        hidden.add('status')
    if not with_lifecycle:
        hidden.update(('status_reason', 'services'))
    shown = [name for name in Device._wsme_attr_order[:-1]
             if name not in hidden]
    items = list(base.view_items(view, shown, RESOURCE, bookmark=False))
    return {'devices': items}


class DeviceCollection(wtypes.Base):
    """``{"devices": [...]}``."""

    devices = [Device]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None, **view):
        return base.with_next(
            cls(devices=[Device.from_object(obj, **view) for obj in objs]),
            next_link)
