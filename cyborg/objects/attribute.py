"""Attribute: a key/value fact about a deployable (rc, traits...)."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Attribute(base.CrudMixin, base.CyborgObject,
                base.CyborgPersistentObject,
                ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = '1.0'

    _resource = 'attributes'

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'deployable_id': fields.IntegerField(nullable=False),
        'key': fields.StringField(nullable=False),
        'value': fields.StringField(nullable=False),
    }
