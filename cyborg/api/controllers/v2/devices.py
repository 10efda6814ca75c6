"""``/v2/devices``: list, show, enable, disable, (2.4) activate, (2.6)
metrics and drain, (2.9) partition mode."""

import json

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
from cyborg.api.types import base as types_base
from cyborg.api.types import device as device_types
from cyborg.api.types import metrics as metrics_types
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import device as device_obj

# NOTE(devices): the legacy filters.field may name any column a client can
# see at every microversion; status appeared in 2.3 and is not filterable.
_LEGACY_FIELDS = ('uuid', 'type', 'vendor', 'model', 'hostname')
_QUERY_PARAMS = ('type', 'vendor', 'hostname', 'filters.field',
                 'filters.value')
_SORT_KEYS = ('id', 'uuid', 'type', 'vendor', 'model', 'hostname',
              'status', 'created_at', 'updated_at')
#: POST /v2/devices/{uuid}/<action>.
ACTIONS = ('enable', 'disable', 'activate', 'drain', 'mode')


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


def _checked(uuid):
    if not uuidutils.is_uuid_like(uuid):
        # NOTE(devices): nothing has that id, so it is not found (404)
        # rather than a malformed request.
        raise exception.DeviceNotFound(uuid=uuid)
    return uuid


def _no_body():
    # NOTE(devices): upstream answers enable and disable with an empty
    # 200, which pecan sends as 204; clients accept either.
    return wsme.api.Response(None, status_code=200, return_type=None)


class DevicesController(rest.RestController):
    """Physical accelerator cards, as the agents discovered them."""

    @expose.expose(device_types.DeviceCollection, wtypes.text, wtypes.text,
                   wtypes.text, types_base.LegacyFilter)
    def get_all(self, type=None, vendor=None, hostname=None, filters=None):
        query = _list_filters(type, vendor, hostname, filters)
        context = pecan.request.context
        policy.authorize('cyborg:device:get_all', None, context)
        pages = paging.parse(_SORT_KEYS)
        listed = device_obj.Device.list_view(context, filters=query,
                                             **pages)
        body = device_types.list_body(listed, details=lambda hosts: (
            device_types.health_details(context, device_obj.Device, hosts)))
        next_link = paging.next_link('devices', body['devices'], pages)
        if next_link:
            body['next'] = next_link
        return types_base.rendered(body)

    @expose.expose(device_types.Device, wtypes.text, wtypes.text, path=2)
    def get_one(self, uuid, part=None):
        """``GET /v2/devices/{uuid}``, and (2.6) ``.../metrics``."""
        _checked(uuid)
        context = pecan.request.context
        if part == 'metrics':
            return self._metrics(context, uuid)
        if part is not None:
            raise exception.RouteNotFound(
                'No such resource: GET /v2/devices/{uuid}/%s' % part)
        policy.authorize('cyborg:device:get_one', None, context)
        device = device_obj.Device.get(context, uuid)
        view = device_types.VIEWS()
        details = device_types.health_details(
            context, device_obj.Device, [device.hostname]) if (
            view.health) else None
        return device_types.Device.from_object(device, view, details)

    @microversion.versioned('2.6')
    def _metrics(self, context, uuid):
        """The latest telemetry sample, asked of the device's agent."""
        policy.authorize('cyborg:device:get_metrics', None, context)
        sample = conductor_rpcapi.for_api().device_metrics(context, uuid)
        return wsme.api.Response(
            metrics_types.DeviceMetrics.from_sample(sample),
            status_code=200, return_type=metrics_types.DeviceMetrics)

    @expose.expose(device_types.Device, wtypes.text, wtypes.text, path=2)
    def post(self, uuid=None, action=None):
        """``POST /v2/devices/{uuid}/<action>``: enable, disable, (2.4)
        activate, (2.6) drain and (2.9) mode."""
        if uuid is None:
            raise exception.MethodNotAllowed()
        call = getattr(self, '_%s' % action, None) if action in (
            ACTIONS) else None
        if call is None:
            raise exception.RouteNotFound(
                'No such action: POST /v2/devices/{uuid}/%s' % action)
        return call(pecan.request.context, _checked(uuid))

    # NOTE(devices): upstream serves enable and disable whatever the
    # microversion; openstacksdk sends none and must not get a 404.
    def _enable(self, context, uuid):
        """End maintenance (or activate an inactive device)."""
        policy.authorize('cyborg:device:enable', None, context)
        conductor_rpcapi.for_api().set_device_enabled(context, uuid,
                                                           True)
        return _no_body()

    def _disable(self, context, uuid):
        """Put the device in maintenance."""
        policy.authorize('cyborg:device:disable', None, context)
        conductor_rpcapi.for_api().set_device_enabled(context, uuid,
                                                           False)
        return _no_body()

    @microversion.versioned('2.4')
    def _activate(self, context, uuid):
        """Run the driver's install step; the device once it is ready."""
        policy.authorize('cyborg:device:activate', None, context)
        device = conductor_rpcapi.for_api().activate_device(context,
                                                                 uuid)
        return device_types.Device.from_object(device)

    @microversion.versioned('2.9')
    def _mode(self, context, uuid):
        """``{"mode": ...}``: switch the device to one of its ``modes``
        once nothing is bound to it; the device in its new mode."""
        policy.authorize('cyborg:device:set_mode', None, context)
        request = pecan.request
        body = json.loads(request.body) if request.body else None
        validation.validate(validation.DEVICE_MODE, body)
        device = conductor_rpcapi.for_api().set_device_mode(
            context, uuid, body['mode'])
        return device_types.Device.from_object(
            device, device_types.VIEWS(), device_types.health_details(
                context, device_obj.Device, [device.hostname]))

    @microversion.versioned('2.6')
    def _drain(self, context, uuid):
        """No new bind; maintenance once the bound ARQs have unbound."""
        policy.authorize('cyborg:device:drain', None, context)
        device = conductor_rpcapi.for_api().drain_device(context, uuid)
        view = device_types.VIEWS()
        return device_types.Device.from_object(
            device, view, device_types.health_details(
                context, device_obj.Device, [device.hostname]))
