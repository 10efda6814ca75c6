"""Accelerator: a /v1 accelerator as the conductor shows it."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Accelerator(base.CyborgObject, ovo_base.VersionedObjectDictCompat):
    """A discovered deployable or an operator's record, with its spec and
    attachments (``cyborg.db.accelerators`` builds the view).

    NOTE(objects): /v1 RPC answers still carry ``as_view()``, the dict
    conductors of RPC 1.6 answered, so that pinned API services read them.
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        # NOTE(objects): text, as /v1 took an operator's uuid unchecked.
        'uuid': fields.StringField(nullable=False),
        'name': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'deployable_uuid': fields.StringField(nullable=True),
        'device_uuid': fields.StringField(nullable=True),
        'created_at': fields.StringField(nullable=True),
        'updated_at': fields.StringField(nullable=True),
        'acc_specs': fields.FlexibleDictField(nullable=False),
        'revision': fields.IntegerField(nullable=False),
        'attachments': fields.ListOfDictOfNullableStringsField(
            nullable=False, default=[]),
    }

    @classmethod
    def from_view(cls, context, view):
        """The object of a view dict of ``cyborg.db.accelerators``."""
        obj = cls(context)
        for name in cls.fields:
            setattr(obj, name, view[name])
        obj.obj_reset_changes()
        return obj

    def as_view(self):
        """The view dict, as /v1 RPC answers carry it."""
        return {name: getattr(self, name) for name in self.fields}
