"""The DeviceProfile resource as the API shows it."""

import wsme.types as wtypes

from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'device_profiles'


class DeviceProfile(base.APIBase):
    """A named list of request groups that a flavor points at."""

    uuid = wtypes.text
    name = wtypes.text
    description = wtypes.text
    groups = wtypes.ArrayType(wtypes.DictType(wtypes.text, wtypes.text))
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'name', 'description', 'groups',
                        'created_at', 'updated_at', 'links')

    _object_fields = ('uuid', 'name', 'groups')

    @classmethod
    def from_object(cls, obj, **extra):
        # NOTE(api): upstream shows "" for a profile without description.
        return super().from_object(
            obj, description=obj.description or '',
            links=link.resource_links(RESOURCE, obj.uuid), **extra)


class DeviceProfileOne(wtypes.Base):
    """``{"device_profile": {...}}``: get-one wraps, unlike create."""

    device_profile = DeviceProfile


class DeviceProfileCollection(wtypes.Base):
    """``{"device_profiles": [...]}``."""

    device_profiles = [DeviceProfile]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None):
        return base.with_next(
            cls(device_profiles=[DeviceProfile.from_object(obj)
                                 for obj in objs]),
            next_link)


class DeviceProfilePost(base.Body):
    """One profile of ``POST /v2/device_profiles``."""

    name = wtypes.text
    description = wtypes.text
    uuid = wtypes.text
    groups = wtypes.ArrayType(wtypes.DictType(wtypes.text, wtypes.text))


#: The body of ``POST /v2/device_profiles``: a list of exactly one profile,
#: as every client sends it; a bare profile object is taken too.
POST_BODY = base.ListOrItem(DeviceProfilePost)
