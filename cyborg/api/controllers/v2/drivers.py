"""``/v2/drivers`` (2.5): the drivers of each agent; install, uninstall and
update them on a host."""

import urllib.parse

import pecan
from pecan import rest

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api import validation
from cyborg.api import validation_ops
from cyborg.api.types import base as types_base
from cyborg.api.types import link
from cyborg.conductor import rpcapi as conductor_rpcapi

MIN_VERSION = (2, 5)


def require_version(route):
    if not microversion.at_least(*MIN_VERSION):
        raise exception.NotFound('%s needs microversion 2.5' % route)


def request_body():
    """The JSON body, or None when there is none."""
    raw = pecan.request.body
    return validation.json_body(pecan.request) if raw else None


def _url(host, name):
    return '%s/v2/drivers/%s/%s' % (link.public_url(),
                                    urllib.parse.quote(host, safe=''),
                                    urllib.parse.quote(name, safe=''))


class DriversController(rest.RestController):
    """One entry per driver installed on an agent's host."""

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def get_all(self, **params):
        require_version('GET /v2/drivers')
        types_base.check_query(params, ('host',))
        host = params.get('host')
        context = pecan.request.context
        policy.authorize('cyborg:driver:get_all', None, context)
        return {'drivers': conductor_rpcapi.ConductorAPI().list_drivers(
            context, host=host)}

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def post(self, *rest, **_members):
        """Install: ``{"host", "name"}``; 201 with the driver."""
        require_version('POST /v2/drivers')
        if rest:
            pecan.abort(405)
        context = pecan.request.context
        policy.authorize('cyborg:driver:install', None, context)
        wanted = validation_ops.optional(validation_ops.DRIVER_INSTALL,
                                         request_body())
        entry = conductor_rpcapi.ConductorAPI().install_driver(
            context, wanted['host'], wanted['name'])
        pecan.response.status = 201
        pecan.response.headers['Location'] = _url(entry['host'],
                                                  entry['name'])
        return entry

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def patch(self, *args, **_members):
        """Update: reload its options, or load ``{"image_uuid"}``."""
        host, name, rest = expose.segments(args, 2)
        require_version('PATCH /v2/drivers/{host}/{name}')
        if name is None or rest:
            pecan.abort(405)
        context = pecan.request.context
        policy.authorize('cyborg:driver:update', None, context)
        image = validation_ops.image_uuid(request_body())
        return conductor_rpcapi.ConductorAPI().update_driver(
            context, host, name, image_id=image)

    @pecan.expose(content_type='application/json')
    def delete(self, *args, **_members):
        """Uninstall; 204."""
        host, name, rest = expose.segments(args, 2)
        require_version('DELETE /v2/drivers/{host}/{name}')
        if name is None or rest:
            pecan.abort(405)
        context = pecan.request.context
        policy.authorize('cyborg:driver:uninstall', None, context)
        conductor_rpcapi.ConductorAPI().uninstall_driver(context, host, name)
        pecan.response.status = 204
        return ''
