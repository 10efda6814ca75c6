"""The Attribute resource as the API shows it."""

import wsme.types as wtypes

from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'attributes'


class Attribute(base.APIBase):
    """A key/value fact about a deployable; trait keys reach Placement."""

    uuid = wtypes.text
    deployable_id = int
    key = wtypes.text
    value = wtypes.text
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'deployable_id', 'key', 'value',
                        'created_at', 'updated_at', 'links')

    _object_fields = ('uuid', 'deployable_id', 'key', 'value')

    @classmethod
    def from_object(cls, obj, **extra):
        return super().from_object(
            obj, links=link.resource_links(RESOURCE, obj.uuid), **extra)


class AttributeCollection(wtypes.Base):
    """``{"attributes": [...]}``."""

    attributes = [Attribute]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None):
        return base.with_next(
            cls(attributes=[Attribute.from_object(obj) for obj in objs]),
            next_link)


class AttributePost(base.Body):
    """``POST /v2/attributes``; from 2.4 the deployable may be named by
    ``deployable_uuid`` instead of ``deployable_id``."""

    # NOTE(attributes): an integer, or the string the openstack CLI passes
    # on (the id's digits, or the deployable's uuid); the body's schema
    # checks which.
    deployable_id = base.JSON
    deployable_uuid = wtypes.text
    key = wtypes.text
    value = wtypes.text
