"""AttachHandle: what Nova attaches to an instance (PCI function, mdev)."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class AttachHandle(base.CrudMixin, base.CyborgObject,
                   base.CyborgPersistentObject,
                   ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = '1.0'

    _resource = 'attach_handles'

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'deployable_id': fields.IntegerField(nullable=False),
        'cpid_id': fields.IntegerField(nullable=False),
        'attach_type': fields.AttachHandleTypeField(nullable=False),
        'attach_info': fields.StringField(nullable=False),
        'in_use': fields.BooleanField(nullable=False, default=False),
    }
