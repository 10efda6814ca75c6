"""``/v2/deployables``: list, show, and program with a Glance image."""

from oslo_config import cfg
from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import paging
from cyborg.api import validation
from cyborg.api.types import base as types_base
from cyborg.api.types import deployable as deployable_types
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import deployable as deployable_obj

CONF = cfg.CONF

_QUERY_PARAMS = ('filters.field', 'filters.value')

# NOTE(deployables): the legacy filters.field names. Columns filter by
# equality; parent_uuid/root_uuid name a deployable whose id is the
# column's value; limit/marker/sort_* page the list; v1 fields that no
# longer exist are refused rather than silently ignored.
_COLUMNS = {'uuid': str, 'name': str, 'rp_uuid': str, 'driver_name': str,
            'bitstream_id': str, 'device_id': int, 'parent_id': int,
            'root_id': int, 'num_accelerators': int}
_BY_UUID = {'parent_uuid': 'parent_id', 'root_uuid': 'root_id'}
_PAGING = ('limit', 'marker', 'sort_key', 'sort_dir')
_SORT_KEYS = ('id', 'created_at', 'updated_at') + tuple(_COLUMNS)
_FIELDS = tuple(_COLUMNS) + tuple(_BY_UUID) + _PAGING


def _bad(reason):
    return exception.InvalidLegacyFilter(reason=reason)


def _paging(field, value):
    if field == 'limit':
        limit = validation.positive_int(value, maximum=float('inf'))
        if limit is None:
            raise _bad('limit must be a positive integer')
        return min(limit, CONF.api.max_limit)
    if field == 'marker' and not uuidutils.is_uuid_like(value):
        raise _bad('marker must be a deployable UUID')
    if field == 'sort_key' and value not in _SORT_KEYS:
        raise _bad('sort_key must be one of %s' % ', '.join(_SORT_KEYS))
    if field == 'sort_dir' and value not in ('asc', 'desc'):
        raise _bad('sort_dir must be asc or desc')
    return value


def _list_query(legacy):
    """(list keyword arguments, (column, uuid) to resolve or None)."""
    types_base.check_query(pecan.request.params,
                           _QUERY_PARAMS + paging.params())
    if legacy is None:
        return {}, None
    field, value = legacy.as_pair()
    if field not in _FIELDS:
        raise _bad('field %r is not one of %s' % (field, ', '.join(_FIELDS)))
    if field in _PAGING:
        return {field: _paging(field, value)}, None
    if field in _BY_UUID:
        return {}, (_BY_UUID[field], value)
    if _COLUMNS[field] is int:
        value = validation.positive_int(value)
        if value is None:
            raise _bad('%s must be an integer from 1 to %d' %
                       (field, validation.MAX_INT))
    return {'filters': {field: value}}, None


def _resolve(context, by_uuid):
    """The filter on a deployable's id given its uuid; None: no match."""
    column, uuid = by_uuid
    if not uuidutils.is_uuid_like(uuid):
        return None
    try:
        return {column: deployable_obj.Deployable.get(context, uuid).id}
    except exception.DeployableNotFound:
        return None


class DeployablesController(rest.RestController):
    """The assignable parts of devices (one Placement provider each)."""

    @expose.expose(deployable_types.DeployableCollection,
                   types_base.LegacyFilter)
    def get_all(self, filters=None):
        query, by_uuid = _list_query(filters)
        pages = paging.parse(_SORT_KEYS)
        query = dict(pages, **query)
        context = pecan.request.context
        policy.authorize('cyborg:deployable:get_all', None, context)
        if by_uuid is not None:
            query['filters'] = _resolve(context, by_uuid)
            if query['filters'] is None:
                return deployable_types.DeployableCollection(deployables=[])
        view = deployable_obj.Deployable.list_view(context, **query)
        body = deployable_types.list_body(view)
        next_link = paging.next_link('deployables', body['deployables'],
                                     query)
        if next_link:
            body['next'] = next_link
        return types_base.rendered(body)

    @expose.expose(deployable_types.Deployable, wtypes.text)
    def get_one(self, uuid):
        if not uuidutils.is_uuid_like(uuid):
            raise exception.DeployableNotFound(uuid=uuid)
        context = pecan.request.context
        policy.authorize('cyborg:deployable:get_one', None, context)
        deployable = deployable_obj.Deployable.get(context, uuid)
        return deployable_types.Deployable.from_object(deployable)

    @expose.expose(deployable_types.Deployable, wtypes.text, wtypes.text,
                   body=deployable_types.PROGRAM_BODY,
                   schema=validation.PROGRAM_PATCH, path=2)
    def patch(self, uuid=None, action=None, operations=None):
        """``PATCH /v2/deployables/{uuid}/program`` with
        ``[{"op": "replace", "path": "/program",
        "value": [{"image_uuid": ...}]}]``; 200 with the deployable once
        the agent has loaded the image."""
        if uuid is None:
            raise exception.MethodNotAllowed()
        if action != 'program':
            raise exception.RouteNotFound('No such action: PATCH '
                                          '/v2/deployables/{uuid}/%s'
                                          % action)
        if not uuidutils.is_uuid_like(uuid):
            raise exception.DeployableNotFound(uuid=uuid)
        context = pecan.request.context
        policy.authorize('cyborg:deployable:program', None, context)
        image = validation.program_patch(types_base.as_plain(operations))
        programmed = conductor_rpcapi.for_api().program_deployable(
            context, uuid, image)
        return deployable_types.Deployable.from_object(programmed)
