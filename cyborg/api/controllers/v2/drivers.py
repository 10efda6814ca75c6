"""``/v2/drivers`` (2.5): the drivers of each agent; install, uninstall and
update them on a host."""

import urllib.parse

import pecan
from pecan import rest
import wsme.api
import wsme.types as wtypes

from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api import validation_ops
from cyborg.api.types import base as types_base
from cyborg.api.types import driver as driver_types
from cyborg.api.types import link
from cyborg.conductor import rpcapi as conductor_rpcapi

#: The microversion that added the driver and service operations.
SINCE = '2.5'


def _url(host, name):
    return '%s/v2/drivers/%s/%s' % (link.public_url(),
                                    urllib.parse.quote(host, safe=''),
                                    urllib.parse.quote(name, safe=''))


class DriversController(rest.RestController):
    """One entry per driver installed on an agent's host."""

    @expose.expose(driver_types.DriverCollection, wtypes.text)
    @microversion.versioned(SINCE)
    def get_all(self, host=None):
        types_base.check_query(pecan.request.params, ('host',))
        context = pecan.request.context
        policy.authorize('cyborg:driver:get_all', None, context)
        return driver_types.DriverCollection.from_entries(
            conductor_rpcapi.for_api().list_drivers(context, host=host))

    @expose.expose(driver_types.Driver, body=driver_types.DriverInstall,
                   schema=validation_ops.DRIVER_INSTALL, status_code=201)
    @microversion.versioned(SINCE)
    def post(self, wanted):
        """Install: ``{"host", "name"}``; 201 with the driver."""
        context = pecan.request.context
        policy.authorize('cyborg:driver:install', None, context)
        entry = conductor_rpcapi.for_api().install_driver(
            context, wanted.host, wanted.name)
        pecan.response.headers['Location'] = _url(entry['host'],
                                                  entry['name'])
        return driver_types.Driver.from_entry(entry)

    @expose.expose(driver_types.Driver, wtypes.text, wtypes.text,
                   body=driver_types.DriverUpdate,
                   schema=validation_ops.DRIVER_UPDATE, body_required=False)
    @microversion.versioned(SINCE)
    def patch(self, host, name, update=None):
        """Update: reload its options, or load ``{"image_uuid"}``."""
        context = pecan.request.context
        policy.authorize('cyborg:driver:update', None, context)
        image = update.image_uuid if update is not None else None
        return driver_types.Driver.from_entry(
            conductor_rpcapi.for_api().update_driver(
                context, host, name,
                image_id=None if image is wtypes.Unset else image))

    @expose.expose(None, wtypes.text, wtypes.text, status_code=204)
    @microversion.versioned(SINCE)
    def delete(self, host, name):
        """Uninstall; 204."""
        context = pecan.request.context
        policy.authorize('cyborg:driver:uninstall', None, context)
        conductor_rpcapi.for_api().uninstall_driver(context, host, name)
        return wsme.api.Response(None, status_code=204, return_type=None)
