"""The AcceleratorRequest (ARQ) resource as the API shows it."""

import wsme.types as wtypes

from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'accelerator_requests'


class ARQ(base.APIBase):
    """One accelerator of a device profile group, as Nova binds it."""

    uuid = wtypes.text
    state = wtypes.text
    device_profile_name = wtypes.text
    device_profile_group_id = int
    hostname = wtypes.text
    device_rp_uuid = wtypes.text
    instance_uuid = wtypes.text
    project_id = wtypes.text
    attach_handle_type = wtypes.text
    attach_handle_uuid = wtypes.text
    attach_handle_info = wtypes.DictType(wtypes.text, wtypes.text)
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'state', 'device_profile_name',
                        'device_profile_group_id', 'hostname',
                        'device_rp_uuid', 'instance_uuid', 'project_id',
                        'attach_handle_type', 'attach_handle_uuid',
                        'attach_handle_info', 'created_at', 'updated_at',
                        'links')

    _object_fields = _wsme_attr_order[:11]

    @classmethod
    def from_object(cls, obj, **extra):
        return super().from_object(
            obj, links=link.resource_links(RESOURCE, obj.uuid,
                                           bookmark=False), **extra)


class ARQCollection(wtypes.Base):
    """``{"arqs": [...]}``."""

    arqs = [ARQ]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None):
        return base.with_next(cls(arqs=[ARQ.from_object(obj) for obj in objs]),
                              next_link)



class ARQCreate(base.Body):
    """``POST /v2/accelerator_requests``: the profile to request from."""

    device_profile_name = wtypes.text
    # NOTE(api): python-cyborgclient sends these (usually null); upstream
    # ignores them, and so does this API.
    device_profile_group_id = int
    image_uuid = wtypes.text


class PatchOperation(base.Body):
    """One JSON-patch operation of a bind (add) or an unbind (remove)."""

    op = wtypes.text
    path = wtypes.text
    value = wtypes.text


#: ``PATCH /v2/accelerator_requests``: ARQ uuid -> its operations.
PATCH_BODY = wtypes.DictType(wtypes.text, [PatchOperation])
