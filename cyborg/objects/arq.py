"""AcceleratorRequest: one accelerator of a device profile group (an ARQ)."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class AcceleratorRequest(base.CyborgObject, base.CyborgPersistentObject,
                         ovo_base.VersionedObjectDictCompat):
    """An ARQ with what clients see of its profile and attach handle.

    The conductor builds these from one joined query
    (``cyborg.conductor.bind.store``); the API never writes them directly.
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'state': fields.ARQStateField(nullable=False),
        'device_profile_name': fields.StringField(nullable=False),
        'device_profile_group_id': fields.IntegerField(nullable=False),
        'hostname': fields.StringField(nullable=True),
        'device_rp_uuid': fields.StringField(nullable=True),
        'instance_uuid': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'attach_handle_type': fields.StringField(nullable=False,
                                                 default=''),
        'attach_handle_uuid': fields.StringField(nullable=True),
        'attach_handle_info': fields.DictOfNullableStringsField(
            nullable=False, default={}),
    }
