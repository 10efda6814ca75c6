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
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                        'vendor_board_info', 'hostname', 'status',
                        'created_at', 'updated_at', 'links')

    _object_fields = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                     'vendor_board_info', 'hostname')

    @classmethod
    def from_object(cls, obj, with_status=False):
        """The view of a Device object.

        :param with_status: include ``status`` (microversion 2.3 and later);
            otherwise the field is absent, not null.
        """
        extra = {'links': link.resource_links(RESOURCE, obj.uuid,
                                              bookmark=False)}
        if with_status:
            extra['status'] = obj.status
        return super().from_object(obj, **extra)


class DeviceCollection(wtypes.Base):
    """``{"devices": [...]}``."""

    devices = [Device]

    @classmethod
    def from_objects(cls, objs, with_status=False):
        return cls(devices=[Device.from_object(obj, with_status=with_status)
                            for obj in objs])
