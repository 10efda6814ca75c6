"""``/v2/attributes``: facts about deployables; trait ones go to Placement.
"""

from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme.api
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api import paging
from cyborg.api import validation
from cyborg.api.types import attribute as attribute_types
from cyborg.api.types import base as types_base
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import attribute as attribute_obj
from cyborg.objects import deployable as deployable_obj

_SORT_KEYS = ('id', 'uuid', 'deployable_id', 'key', 'created_at',
              'updated_at')

#: The query parameters of GET /v2/attributes at each microversion.
_QUERY = microversion.ByVersion({
    '2.0': ('deployable_id', 'key'),
    '2.4': ('deployable_id', 'key', 'deployable_uuid'),
})


def _deployable_id(value):
    found = validation.positive_int(value)
    if found is None:
        raise exception.InvalidParameterValue(
            err='deployable_id must be a positive integer, not %r' % value)
    return found


def _by_uuid(context, uuid):
    """The id of the deployable ``uuid``; 400 when there is none."""
    if not uuidutils.is_uuid_like(uuid):
        raise exception.InvalidUUID(uuid=uuid)
    try:
        return deployable_obj.Deployable.get(context, uuid).id
    except exception.DeployableNotFound:
        raise exception.Invalid(
            reason='deployable %s does not exist' % uuid) from None


def _check_uuid(uuid):
    if not uuidutils.is_uuid_like(uuid):
        raise exception.AttributeNotFound(uuid=uuid)


class AttributesController(rest.RestController):
    """Attributes of deployables: drivers set ``rc`` and ``traitN``;
    operators add their own."""

    @expose.expose(attribute_types.AttributeCollection, wtypes.text,
                   wtypes.text, wtypes.text)
    def get_all(self, deployable_id=None, key=None, deployable_uuid=None):
        types_base.check_query(pecan.request.params,
                               _QUERY() + paging.params())
        pages = paging.parse(_SORT_KEYS)
        filters = {}
        if deployable_id is not None:
            filters['deployable_id'] = _deployable_id(deployable_id)
        if key is not None:
            filters['key'] = key
        context = pecan.request.context
        policy.authorize('cyborg:attribute:get_all', None, context)
        if deployable_uuid is not None:
            if 'deployable_id' in filters:
                raise exception.Invalid(reason='give deployable_id or '
                                               'deployable_uuid, not both')
            filters['deployable_id'] = _by_uuid(context, deployable_uuid)
        found = attribute_obj.Attribute.list(context, filters=filters or None,
                                             **pages)
        return attribute_types.AttributeCollection.from_objects(
            found, next_link=paging.next_link('attributes', found, pages))

    @expose.expose(attribute_types.Attribute, wtypes.text)
    def get_one(self, uuid):
        _check_uuid(uuid)
        context = pecan.request.context
        policy.authorize('cyborg:attribute:get_one', None, context)
        return attribute_types.Attribute.from_object(
            attribute_obj.Attribute.get(context, uuid))

    @expose.expose(attribute_types.Attribute,
                   body=attribute_types.AttributePost,
                   schema=validation.ATTRIBUTE_POSTS, status_code=201,
                   envelope='attribute')
    def post(self, attribute):
        """Create from ``{"deployable_id", "key", "value"}``, bare or in
        ``{"attribute": ...}`` as openstacksdk sends it; 201."""
        context = pecan.request.context
        policy.authorize('cyborg:attribute:create', None, context)
        fields = validation.attribute(attribute.as_dict())
        deployable_id = fields.get('deployable_id')
        if deployable_id is None:
            deployable_id = _by_uuid(context, fields['deployable_uuid'])
        elif isinstance(deployable_id, str):
            deployable_id = (_deployable_id(deployable_id)
                             if deployable_id.isdigit()
                             else _by_uuid(context, deployable_id))
        created = conductor_rpcapi.for_api().create_attribute(
            context, deployable_id, fields['key'], fields['value'])
        view = attribute_types.Attribute.from_object(created)
        pecan.response.location = view.links[0].href
        return view

    @expose.expose(None, wtypes.text, status_code=204)
    def delete(self, uuid):
        _check_uuid(uuid)
        context = pecan.request.context
        policy.authorize('cyborg:attribute:delete', None, context)
        conductor_rpcapi.for_api().delete_attribute(context, uuid)
        return wsme.api.Response(None, status_code=204, return_type=None)
