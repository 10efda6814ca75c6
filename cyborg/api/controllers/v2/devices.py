"""``/v2/devices``: list, show and (2.4) activate."""

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
from cyborg.api.types import base as types_base
from cyborg.api.types import device as device_types
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import device as device_obj

# NOTE(devices): the legacy filters.field may name any column a client can
# see at every microversion; status appeared in 2.3 and is not filterable.
_LEGACY_FIELDS = ('uuid', 'type', 'vendor', 'model', 'hostname')
_QUERY_PARAMS = ('type', 'vendor', 'hostname', 'filters.field',
                 'filters.value')
_SORT_KEYS = ('id', 'uuid', 'type', 'vendor', 'model', 'hostname',
              'status', 'created_at', 'updated_at')


def _list_filters(type_, vendor, hostname, legacy):
    """The object filters of GET /v2/devices; 400 for a bad query."""
    types_base.check_query(pecan.request.params,
                           _QUERY_PARAMS + paging.params())
    filters = {name: value for name, value in (('type', type_),
                                               ('vendor', vendor),
                                               ('hostname', hostname))
               if value is not None}
    if legacy is not None:
        field, value = legacy.as_pair()
        if field not in _LEGACY_FIELDS:
            raise exception.InvalidLegacyFilter(
                reason='field %r is not one of %s' % (
                    field, ', '.join(_LEGACY_FIELDS)))
        if filters.get(field, value) != value:
            raise exception.InvalidLegacyFilter(
                reason='it contradicts the %s parameter' % field)
        filters[field] = value
    return filters


class DevicesController(rest.RestController):
    """Physical accelerator cards, as the agents discovered them."""

    @expose.expose(device_types.DeviceCollection, wtypes.text, wtypes.text,
                   wtypes.text, types_base.LegacyFilter,
                   ignore_extra_args=True)
    def get_all(self, type=None, vendor=None, hostname=None, filters=None):
        view = _view()
        query = _list_filters(type, vendor, hostname, filters)
        context = pecan.request.context
        policy.authorize('cyborg:device:get_all', None, context)
        pages = paging.parse(_SORT_KEYS)
        listed = device_obj.Device.list_view(context, filters=query,
                                             **pages)
        body = device_types.list_body(listed, **view)
        next_link = paging.next_link('devices', body['devices'], pages)
        if next_link:
            body['next'] = next_link
        return types_base.rendered(body)

    @expose.expose(device_types.Device, wtypes.text)
    def get_one(self, uuid):
        view = _view()
        _check_uuid(uuid)
        context = pecan.request.context
        policy.authorize('cyborg:device:get_one', None, context)
        device = device_obj.Device.get(context, uuid)
        return device_types.Device.from_object(device, **view)

    @expose.expose(device_types.Device, wtypes.text, wtypes.text)
    def post(self, uuid, action):
        """``POST /v2/devices/{uuid}/<action>``.

        ``enable`` and ``disable`` (2.3) answer with no body (pecan sends
        that 200 as 204, as for upstream's); ``activate`` (2.4) answers
        with the device.
        """
        since, call = _ACTIONS.get(action, ((99, 0), None))
        if call is None or not microversion.at_least(*since):
            raise exception.NotFound(
                'No such action: POST /v2/devices/{uuid}/%s' % action)
        _check_uuid(uuid)
        context = pecan.request.context
        policy.authorize('cyborg:device:%s' % action, None, context)
        device = call(conductor_rpcapi.ConductorAPI(), context, uuid)
        if action != 'activate':
            return wsme.api.Response(None, status_code=200,
                                     return_type=None)
        return device_types.Device.from_object(device, **_view())


_ACTIONS = {
    'activate': ((2, 4), lambda api, ctx, uuid: api.activate_device(
        ctx, uuid)),
    'enable': ((2, 3), lambda api, ctx, uuid: api.set_device_enabled(
        ctx, uuid, True)),
    'disable': ((2, 3), lambda api, ctx, uuid: api.set_device_enabled(
        ctx, uuid, False)),
}


def _view():
    return {'with_status': microversion.at_least(2, 3),
            'with_lifecycle': microversion.at_least(2, 4)}


def _check_uuid(uuid):
    if not uuidutils.is_uuid_like(uuid):
        # NOTE(devices): nothing has that id, so it is not found (404)
        # rather than a malformed request.
        raise exception.DeviceNotFound(uuid=uuid)
