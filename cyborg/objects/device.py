"""Device: a physical accelerator card on one host."""

import json

from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Device(base.CrudMixin, base.CyborgObject,
             base.CyborgPersistentObject, ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    # Version 1.1: services, status_reason
    VERSION = '1.1'

    _resource = 'devices'

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

    @classmethod
    def _from_db_object(cls, obj, db_row, context=None):
        super()._from_db_object(obj, db_row, context)
        obj.services = json.loads(db_row.services) if db_row.services else []
        obj.obj_reset_changes(['services'])
        return obj

    @classmethod
    def db_excluded_fields(cls):
        return ('services',)

    def obj_get_changes(self):
        changes = super().obj_get_changes()
        if 'services' in changes:
            changes['services'] = json.dumps(sorted(changes['services']))
        return changes

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('services', None)
            primitive.pop('status_reason', None)
