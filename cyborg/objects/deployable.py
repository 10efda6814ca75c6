"""Deployable: the assignable part of a device, one Placement provider."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Deployable(base.CrudMixin, base.CyborgObject,
                 base.CyborgPersistentObject,
                 ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    # Version 1.1: list_view
    # Version 1.2: cleaning_since
    VERSION = '1.2'

    _resource = 'deployables'
    _fields_since = {(1, 2): ('cleaning_since',)}
    _methods_since = {'list_view': (1, 1)}
    _older_forms = {'list_view': '_list_view_by_list'}
    #: The columns of ``list_view``, in its order.
    VIEW_FIELDS = ('uuid', 'parent_id', 'root_id', 'name',
                   'num_accelerators', 'device_id', 'rp_uuid', 'driver_name',
                   'bitstream_id', 'created_at', 'updated_at',
                   'cleaning_since', 'attributes_list')

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'parent_id': fields.IntegerField(nullable=True),
        'root_id': fields.IntegerField(nullable=True),
        'name': fields.StringField(nullable=False),
        'num_accelerators': fields.IntegerField(nullable=False),
        'device_id': fields.IntegerField(nullable=False),
        'driver_name': fields.StringField(nullable=True),
        'rp_uuid': fields.UUIDField(nullable=True),
        'bitstream_id': fields.UUIDField(nullable=True),
        # Since when it is scrubbed for its next tenant; None when it is
        # not.
        'cleaning_since': fields.DateTimeField(nullable=True),
        # One single-key dict per attribute, in creation order, as the
        # upstream API renders them.
        'attributes_list': fields.ListOfDictOfNullableStringsField(
            nullable=False, default=[]),
    }

    @classmethod
    def db_excluded_fields(cls):
        return ('attributes_list',)

    @classmethod
    def _from_db_object(cls, obj, db_row, context=None):
        super()._from_db_object(obj, db_row, context)
        obj.attributes_list = [{attr.key: attr.value}
                               for attr in db_row.attributes]
        obj.obj_reset_changes(['attributes_list'])
        return obj

    @ovo_base.remotable_classmethod
    def list_view(cls, context, filters=None, limit=None, marker=None,
                  sort_key='id', sort_dir='asc'):
        """What ``list`` selects, as ``{'fields': [names], 'rows': JSON
        text of one list of values per deployable}``: no object is built,
        sent or read back for each of thousands of rows."""
        return cls.listings.deployables(
            context, filters=filters, limit=limit, marker=marker,
            sort_key=sort_key, sort_dir=sort_dir)

    @classmethod
    def _list_view_by_list(cls, context, **query):
        # NOTE(objects): conductors older than Deployable 1.1 have no list
        # view; their objects make the same rows, without cleaning_since.
        return base.view_rows(cls.list(context, **query), [
            name for name in cls.VIEW_FIELDS
            if name not in cls._fields_since[(1, 2)]])

    def obj_get_changes(self):
        changes = super().obj_get_changes()
        # NOTE(objects): attributes are rows of their own; they are never
        # written through the deployable.
        changes.pop('attributes_list', None)
        return changes
