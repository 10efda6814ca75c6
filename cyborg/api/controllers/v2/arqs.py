"""``/v2/accelerator_requests``: ARQs as Nova creates, binds and deletes them.
"""

from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme.api
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import paging
from cyborg.api import validation
from cyborg.api.types import arq as arq_types
from cyborg.api.types import base as types_base
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.policies import arq as arq_policies

_SORT_KEYS = ('id', 'uuid', 'state', 'instance_uuid', 'hostname',
              'created_at', 'updated_at')
RESOLVED = 'resolved'


def _scope(action, context):
    """Authorize ``cyborg:arq:<action>``; whose ARQs it reaches (None:
    every project's)."""
    return policy.scope('cyborg:arq:%s' % action, arq_policies.ALL_PROJECTS,
                        context)


def _has_service_token(context):
    return policy.check(arq_policies.SERVICE_TOKEN, None, context)


def _require_service_token(context, action):
    # NOTE(arqs): a tenant's own token must not rebind or free devices of
    # its instances behind Nova's back; Nova sends a service token too.
    if not _has_service_token(context):
        raise exception.ServiceTokenRequired(action=action)


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

    @expose.expose(arq_types.ARQCollection, wtypes.text, wtypes.text)
    def get_all(self, instance=None, bind_state=None):
        """``?instance=``, ``?bind_state=resolved``: with an instance, 423
        while any of its ARQs is not resolved; without, the resolved ones.
        """
        types_base.check_query(pecan.request.params,
                               ('instance', 'bind_state') + paging.params())
        pages = paging.parse(_SORT_KEYS)
        context = pecan.request.context
        project = _scope('get_all', context)
        if instance is not None:
            _check_uuid(instance, 'instance')
        if bind_state is not None and bind_state != RESOLVED:
            raise exception.Invalid(reason='bind_state takes only "%s"'
                                    % RESOLVED)
        arqs = conductor_rpcapi.for_api().list_arqs(
            context, project_id=project, instance_uuid=instance,
            resolved=bind_state is not None, paging=pages)
        return arq_types.ARQCollection.from_objects(
            arqs, next_link=paging.next_link('accelerator_requests', arqs,
                                             pages))

    @expose.expose(arq_types.ARQ, wtypes.text)
    def get_one(self, uuid):
        context = pecan.request.context
        project = _scope('get_one', context)
        if not uuidutils.is_uuid_like(uuid):
            raise exception.ARQNotFound(uuid=uuid)
        arq = conductor_rpcapi.for_api().get_arq(context, uuid,
                                                      project_id=project)
        return arq_types.ARQ.from_object(arq)

    @expose.expose(arq_types.ARQCollection, body=arq_types.ARQCreate,
                   schema=validation.ARQ_CREATE, status_code=201)
    def post(self, request):
        """Create from ``{"device_profile_name": ...}``; 201."""
        context = pecan.request.context
        policy.authorize('cyborg:arq:create', None, context)
        name = request.device_profile_name
        if not name:
            raise exception.DeviceProfileNotFound(uuid="''")
        # NOTE(api): the key makes the create safe to send again past a
        # conductor that stopped with it (rpc._monitored).
        arqs = conductor_rpcapi.for_api().create_arqs(
            context, name, context.project_id,
            key=uuidutils.generate_uuid())
        return arq_types.ARQCollection.from_objects(arqs)

    @expose.expose(None, wtypes.text, body=arq_types.PATCH_BODY,
                   schema=validation.ARQ_PATCH, path=1, status_code=202)
    def patch(self, uuid=None, patch=None):
        """Bind (all ``add``) or unbind (all ``remove``); 202, no body.

        openstacksdk sends the same body to ``/{uuid}``; the uuid must
        then be one the body names.
        """
        types_base.check_query(pecan.request.params, ())
        context = pecan.request.context
        project = _scope('update', context)
        body = types_base.as_plain(patch)
        if uuid is not None and uuid not in body:
            raise exception.Invalid(reason='the body does not patch ARQ %s'
                                    % uuid)
        op, arqs = validation.arq_patch(body)
        if op == 'add' and any('project_id' in binding
                               for binding in arqs.values()):
            policy.authorize(arq_policies.SET_PROJECT, None, context)
        _require_service_token(context, 'Binding and unbinding accelerator '
                                        'requests')
        conductor = conductor_rpcapi.for_api()
        if op == 'add':
            conductor.bind_arqs(context, arqs, project_id=project)
        else:
            conductor.unbind_arqs(context, arqs, project_id=project)
        return wsme.api.Response(None, status_code=202, return_type=None)

    @expose.expose(None, wtypes.text, wtypes.text, wtypes.text, path=1,
                   status_code=204)
    def delete(self, uuid=None, arqs=None, instance=None):
        """``?arqs=u1,u2`` (all must exist) or ``?instance=<uuid>``; the
        sdk deletes one as ``/{uuid}``."""
        types_base.check_query(pecan.request.params, ('arqs', 'instance'))
        if uuid is not None:
            if arqs is not None or instance is not None:
                raise exception.Invalid(reason='name the ARQ to delete in '
                                               'the path or in the query, '
                                               'not both')
            arqs = uuid
        if (arqs is None) == (instance is None):
            raise exception.Invalid(reason='give either arqs=<uuids> or '
                                           'instance=<uuid>')
        context = pecan.request.context
        project = _scope('delete', context)
        conductor = conductor_rpcapi.for_api()
        if instance is not None:
            _check_uuid(instance, 'instance')
            _require_service_token(context, 'Deleting the accelerator '
                                            'requests of an instance')
            conductor.delete_arqs(context, instance_uuid=instance,
                                  project_id=project)
        else:
            # NOTE(arqs): the conductor refuses bound ones without a
            # service token, in the transaction that deletes the others.
            conductor.delete_arqs(
                context, uuids=_uuids(arqs), project_id=project,
                bound_ok=_has_service_token(context))
        return wsme.api.Response(None, status_code=204, return_type=None)
