"""The Deployable resource as the API shows it."""

import json

import wsme.types as wtypes

from cyborg.api import microversion
from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'deployables'

#: Whether a microversion shows ``cleaning``: being scrubbed for the next
#: tenant (2.6).
SHOWS_CLEANING = microversion.ByVersion({'2.0': False, '2.6': True})


class Deployable(base.APIBase):
    """The assignable part of a device (one Placement provider)."""

    uuid = wtypes.text
    parent_id = int
    root_id = int
    name = wtypes.text
    num_accelerators = int
    device_id = int
    attributes_list = wtypes.text
    rp_uuid = wtypes.text
    driver_name = wtypes.text
    bitstream_id = wtypes.text
    cleaning = bool
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'parent_id', 'root_id', 'name',
                        'num_accelerators', 'device_id', 'attributes_list',
                        'rp_uuid', 'driver_name', 'bitstream_id',
                        'cleaning', 'created_at', 'updated_at', 'links')

    _object_fields = ('uuid', 'parent_id', 'root_id', 'name',
                     'num_accelerators', 'device_id', 'rp_uuid',
                     'driver_name', 'bitstream_id')

    @classmethod
    def from_object(cls, obj, cleaning=None):
        """The view of a Deployable object; ``cleaning``: whether it shows
        ``cleaning`` (by default, as the request's microversion says)."""
        # NOTE(api): clients expect attributes_list as a JSON *string* of
        # single-key objects, e.g. "[{\"rc\": \"FPGA\"}]", not a list.
        attributes = (obj.attributes_list
                      if obj.obj_attr_is_set('attributes_list') else [])
        extra = {}
        if SHOWS_CLEANING() if cleaning is None else cleaning:
            extra['cleaning'] = bool(
                obj.obj_attr_is_set('cleaning_since') and
                obj.cleaning_since is not None)
        return super().from_object(
            obj, attributes_list=json.dumps(list(attributes)),
            links=link.resource_links(RESOURCE, obj.uuid), **extra)


def list_body(view):
    """The body ``DeployableCollection`` renders, built from the rows of
    ``Deployable.list_view`` without a WSME object per deployable."""
    items = []
    cleaning = SHOWS_CLEANING()
    # NOTE(api): a conductor older than Deployable 1.2 lists no
    # cleaning_since; nothing of it is being scrubbed then.
    listed = cleaning and 'cleaning_since' in view['fields']
    shown = [name for name in Deployable._wsme_attr_order[:-1]
             if name != 'cleaning'] + (['cleaning_since'] if listed else [])
    for item in base.view_items(view, shown, RESOURCE):
        item['attributes_list'] = json.dumps(item['attributes_list'])
        if cleaning:
            item['cleaning'] = item.pop('cleaning_since', None) is not None
            # NOTE(api): in WSME's order, as get_one renders it.
            item = {name: item[name] for name in Deployable._wsme_attr_order}
        items.append(item)
    return {'deployables': items}


class DeployableCollection(wtypes.Base):
    """``{"deployables": [...]}``."""

    deployables = [Deployable]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None, cleaning=None):
        return base.with_next(
            cls(deployables=[Deployable.from_object(obj, cleaning)
                             for obj in objs]),
            next_link)


class ImageRef(base.Body):
    """The Glance image a deployable is programmed with."""

    image_uuid = wtypes.text


class ProgramOperation(base.Body):
    """``{"op": "replace", "path": "/program", "value": [ImageRef]}``."""

    op = wtypes.text
    path = wtypes.text
    value = [ImageRef]


#: The body of ``PATCH /v2/deployables/{uuid}/program``.
PROGRAM_BODY = [ProgramOperation]
