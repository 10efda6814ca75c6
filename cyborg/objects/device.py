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
    _methods_since = {'list_view': (1, 2)}
    _older_forms = {'list_view': '_list_view_by_list'}
    #: The columns of ``list_view``, in its order.
    VIEW_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                   'vendor_board_info', 'hostname', 'status',
                   'status_reason', 'services', 'created_at', 'updated_at')

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

    @classmethod
    def _list_view_by_list(cls, context, **query):
        # NOTE(objects): conductors older than Device 1.2 have no list view;
        # their objects make the same rows.
        return base.view_rows(cls.list(context, **query), cls.VIEW_FIELDS)
