"""Device: a physical accelerator card on one host."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Device(base.CrudMixin, base.CyborgObject,
             base.CyborgPersistentObject, ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    # Version 1.1: services, status_reason
    # Version 1.2: list_view
    VERSION = '1.2'

    _resource = 'devices'
    _json_fields = ('services',)
    _fields_since = {(1, 1): ('services', 'status_reason')}

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'type': fields.DeviceTypeField(nullable=False),
        'vendor': fields.StringField(nullable=False),
        'model': fields.StringField(nullable=False),
        'std_board_info': fields.StringField(nullable=True),
        'vendor_board_info': fields.StringField(nullable=True),
        'hostname': fields.StringField(nullable=False),
        'status': fields.DeviceStatusField(nullable=False),
        'driver_name': fields.StringField(nullable=True),
        'services': fields.ListOfStringsField(nullable=False, default=[]),
        'status_reason': fields.StringField(nullable=True),
    }

    @ovo_base.remotable_classmethod
    def list_view(cls, context, filters=None, limit=None, marker=None,
                  sort_key='id', sort_dir='asc'):
        """What ``list`` selects, as ``{'fields': [names], 'rows': JSON
        text of one list of values per device}``: no object is built, sent
        or read back for each of thousands of rows."""
        return cls.listings.devices(
            context, filters=filters, limit=limit, marker=marker,
            sort_key=sort_key, sort_dir=sort_dir)
