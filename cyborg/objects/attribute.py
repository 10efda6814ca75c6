"""Attribute: a key/value fact about a deployable (rc, traits...)."""

import re

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


# NOTE(attributes): drivers own "rc" and "trait0".."traitN" (rewritten at
# every report); operators add any other key. An operator key that starts
# with "trait" names a trait the deployable's provider gets in Placement.
_DRIVER_KEY = re.compile(r'^(rc|trait\d+)$')
_TRAIT_KEY_PREFIX = 'trait'


def driver_managed(key: str) -> bool:
    """Whether drivers own this key (operators may not add or delete it)."""
    return bool(_DRIVER_KEY.match(key))


def is_trait_key(key: str) -> bool:
    """Whether an operator's attribute with this key is a Placement trait."""
    return key.startswith(_TRAIT_KEY_PREFIX) and not driver_managed(key)

