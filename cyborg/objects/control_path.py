"""ControlpathID: how a host reaches a device for management."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class ControlpathID(base.CrudMixin, base.CyborgObject,
                    base.CyborgPersistentObject,
                    ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = '1.0'

    _resource = 'controlpath_ids'

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'device_id': fields.IntegerField(nullable=False),
        'cpid_type': fields.StringField(nullable=False),
        'cpid_info': fields.StringField(nullable=False),
    }
