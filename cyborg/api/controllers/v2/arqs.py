"""``/v2/accelerator_requests``: ARQs as Nova creates, binds and deletes them.
"""

from oslo_config import cfg
from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme.api
from wsme.rest import json as wsme_json
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api import paging
from cyborg.api import validation
from cyborg.api.types import arq as arq_types
from cyborg.api.types import base as types_base
from cyborg.conductor import rpcapi as conductor_rpcapi

CONF = cfg.CONF
_SORT_KEYS = ('id', 'uuid', 'state', 'instance_uuid', 'hostname',
              'created_at', 'updated_at')


def _project(context):
    """The project whose ARQs the caller sees; None: every project."""
    return None if context.is_admin else context.project_id


def _has_service_token(context):
    wanted = {role.lower() for role in CONF.api.binding_service_roles}
    return bool(wanted & {role.lower()
                          for role in (context.service_roles or ())})


def _require_service_token(context, action):
    # NOTE(arqs): a tenant's own token must not rebind or free devices of
    # its instances behind Nova's back; Nova sends a service token too.
    if CONF.api.require_service_token and not _has_service_token(context):
        raise exception.ServiceTokenRequired(
            action=action,
            roles=', '.join(sorted(CONF.api.binding_service_roles)))


def _check_uuid(value, what):
    if not uuidutils.is_uuid_like(value):
        raise exception.Invalid(reason='%s must be a UUID, not %r'
                                % (what, value))


def _uuids(value):
    uuids = [item.strip() for item in value.split(',')]
    for uuid in uuids:
        _check_uuid(uuid, 'every ARQ in arqs=')
    return uuids


class ARQsController(rest.RestController):
    """Accelerator requests: one per accelerator an instance asks for."""

    @expose.expose(arq_types.ARQCollection, wtypes.text, wtypes.text,
                   ignore_extra_args=True)
    def get_all(self, instance=None, bind_state=None):
        types_base.check_query(pecan.request.params,
                               ('instance', 'bind_state') + paging.params())
        pages = paging.parse(_SORT_KEYS)
        context = pecan.request.context
        policy.authorize('cyborg:arq:get_all', None, context)
        if instance is not None:
            _check_uuid(instance, 'instance')
        if bind_state is not None and (bind_state != 'resolved' or
                                       instance is None):
            raise exception.Invalid(
                reason='bind_state takes only "resolved", with instance')
        arqs = conductor_rpcapi.ConductorAPI().list_arqs(
            context, project_id=_project(context), instance_uuid=instance,
            resolved=bind_state is not None, paging=pages)
        return arq_types.ARQCollection.from_objects(
            arqs, next_link=paging.next_link('accelerator_requests', arqs,
                                             pages))

    @expose.expose(arq_types.ARQ, wtypes.text)
    def get_one(self, uuid):
        context = pecan.request.context
        policy.authorize('cyborg:arq:get_one', None, context)
        if not uuidutils.is_uuid_like(uuid):
            raise exception.ARQNotFound(uuid=uuid)
        arq = conductor_rpcapi.ConductorAPI().get_arq(
            context, uuid, project_id=_project(context))
        return arq_types.ARQ.from_object(arq)

    # NOTE(arqs): a plain handler, so that a body of any JSON shape gets
    # the schema's 400 (WSME fails on a non-object).
    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def post(self):
        """Create from ``{"device_profile_name": ...}``; 201."""
        context = pecan.request.context
        policy.authorize('cyborg:arq:create', None, context)
        name = validation.arq_create(validation.json_body(pecan.request))
        arqs = conductor_rpcapi.ConductorAPI().create_arqs(
            context, name, context.project_id)
        pecan.response.status = 201
        return wsme_json.tojson(arq_types.ARQCollection,
                                arq_types.ARQCollection.from_objects(arqs))

    # NOTE(arqs): plain pecan, as WSME cannot type a map of patch lists;
    # errors still get the envelope from the ErrorHook.
    @pecan.expose(generic=False, content_type='application/json')
    def patch(self, *args, **_members):
        """Bind (all ``add``) or unbind (all ``remove``); 202, no body.

        openstacksdk sends the same body to ``/{uuid}``; the uuid must
        then be one the body names.
        """
        uuid, rest = expose.segments(args, 1)
        if rest:
            pecan.abort(404)
        types_base.check_query(pecan.request.params, ())
        context = pecan.request.context
        policy.authorize('cyborg:arq:update', None, context)
        body = validation.json_body(pecan.request)
        if uuid is not None and (not isinstance(body, dict) or
                                 uuid not in body):
            raise exception.Invalid(reason='the body does not patch ARQ %s'
                                    % uuid)
        allowed = microversion.at_least(2, 1) and (
            context.is_admin or _has_service_token(context))
        op, arqs = validation.arq_patch(body, allowed)
        _require_service_token(context, 'Binding and unbinding ARQs')
        conductor = conductor_rpcapi.ConductorAPI()
        if op == 'add':
            conductor.bind_arqs(context, arqs, project_id=_project(context))
        else:
            conductor.unbind_arqs(context, arqs,
                                  project_id=_project(context))
        pecan.response.status = 202
        return ''

    @expose.expose(None, wtypes.text, wtypes.text, status_code=204)
    def delete(self, arqs=None, instance=None):
        """``?arqs=u1,u2`` (all must exist) or ``?instance=<uuid>``."""
        types_base.check_query(pecan.request.params, ('arqs', 'instance'))
        if (arqs is None) == (instance is None):
            raise exception.Invalid(reason='give either arqs=<uuids> or '
                                           'instance=<uuid>')
        context = pecan.request.context
        policy.authorize('cyborg:arq:delete', None, context)
        conductor = conductor_rpcapi.ConductorAPI()
        project = _project(context)
        if instance is not None:
            _check_uuid(instance, 'instance')
            _require_service_token(context, 'Deleting the ARQs of an '
                                            'instance')
            conductor.delete_arqs(context, instance_uuid=instance,
                                  project_id=project)
        else:
            # NOTE(arqs): the conductor refuses bound ones without a
            # service token, in the transaction that deletes the others.
            conductor.delete_arqs(
                context, uuids=_uuids(arqs), project_id=project,
                bound_ok=(not CONF.api.require_service_token or
                          _has_service_token(context)))
        return wsme.api.Response(None, status_code=204, return_type=None)
