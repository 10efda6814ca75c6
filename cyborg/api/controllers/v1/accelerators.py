"""``/v1/accelerators``: assignable units, their specs, attach and detach."""

from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme.api
from wsme.rest import json as wsme_json
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import validation_ops
from cyborg.api.types import accelerator as acc_types
from cyborg.api.types import base as types_base
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.policies import accelerator as acc_policies


def _etag(item):
    return '"%s"' % item['revision']


def _if_match(request):
    """The revision a client read, from ``If-Match: "<revision>"``."""
    raw = request.headers.get('If-Match')
    if raw is None or raw.strip() == '*':
        return None
    value = raw.strip().removeprefix('W/').strip('"')
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise exception.Invalid(reason='If-Match takes the ETag of the '
                                       'accelerator, not %r' % raw)
    return int(value)


def _answer(context, item):
    """The accelerator as the caller may see it, with its revision as the
    ETag; another project's attachments show only that they exist."""
    pecan.response.headers['ETag'] = _etag(item)
    return acc_types.Accelerator.from_entry(
        item, policy.reach(acc_policies.ALL_PROJECTS, context))


def _checked(uuid):
    if not uuidutils.is_uuid_like(uuid):
        raise exception.AcceleratorNotFound(uuid=uuid)
    return uuid


class AcceleratorsController(rest.RestController):
    """Discovered deployables and operators' records, as the proposal's
    accelerators."""

    def __init__(self):
        self._conductor = None

    @property
    def conductor(self):
        # NOTE(v1): built on first use, once the transport exists.
        if self._conductor is None:
            self._conductor = conductor_rpcapi.for_api()
        return self._conductor

    @expose.expose(acc_types.AcceleratorCollection)
    def get_all(self):
        types_base.check_query(pecan.request.params, ())
        context = pecan.request.context
        project = policy.scope('cyborg:accelerator:get_all',
                               acc_policies.ALL_PROJECTS, context)
        return acc_types.AcceleratorCollection.from_entries(
            self.conductor.list_accelerators(context), project)

    @expose.expose(acc_types.Accelerator, wtypes.text)
    def get_one(self, uuid):
        context = pecan.request.context
        policy.authorize('cyborg:accelerator:get_one', None, context)
        return _answer(context,
                       self.conductor.get_accelerator(context,
                                                      _checked(uuid)))

    @expose.expose(None, body=acc_types.AcceleratorPost,
                   schema=validation_ops.ACCELERATOR_POST, status_code=201)
    def post(self, accelerator):
        """Create; 201 with an empty body and a Location header."""
        context = pecan.request.context
        policy.authorize('cyborg:accelerator:create', None, context)
        uuid = accelerator.uuid
        item = self.conductor.create_accelerator(
            context, accelerator.name,
            None if uuid is wtypes.Unset else uuid,
            project_id=context.project_id)
        pecan.response.headers['Location'] = acc_types.url(item['uuid'])
        pecan.response.headers['ETag'] = _etag(item)
        return wsme.api.Response(None, status_code=201, return_type=None)

    # NOTE(v1): one handler serves both PUTs, and the path decides the
    # body: an Attach on /{uuid}, a SpecUpdate on /{uuid}/{spec}, each
    # checked against its schema before WSME converts it.
    @expose.expose(acc_types.Accelerator, wtypes.text, wtypes.text,
                   body=types_base.JSON, path=2)
    def put(self, uuid=None, acc_spec=None, body=None):
        """``PUT /{uuid}`` attaches; ``PUT /{uuid}/{acc_spec}`` sets the
        spec (``acc_specs`` whole, or one key of it)."""
        if uuid is None:
            raise exception.MethodNotAllowed()
        context = pecan.request.context
        if acc_spec is not None:
            return self._set_spec(context, uuid, acc_spec, body)
        # NOTE(v1): checked and authorized before the accelerator is looked
        # up, so that its existence tells nothing to who may not attach.
        attach = validation_ops.attach(body)
        wsme_json.fromjson(acc_types.Attach, body)
        policy.authorize('cyborg:accelerator:attach_%s' % (
            'instance' if attach.get('instance_uuid') else 'host'), None,
            context)
        current = self.conductor.get_accelerator(context, _checked(uuid))
        validation_ops.check_names(attach, current)
        return _answer(context, self.conductor.attach_accelerator(
            context, uuid, instance_uuid=attach.get('instance_uuid'),
            host=attach.get('host'), project_id=context.project_id))

    def _set_spec(self, context, uuid, key, body):
        policy.authorize('cyborg:accelerator:update_spec', None, context)
        key, value = validation_ops.spec_put(key, body)
        wsme_json.fromjson(acc_types.SpecUpdate, body)
        return _answer(context, self.conductor.update_accelerator_spec(
            context, _checked(uuid), key, value, _if_match(pecan.request)))

    @expose.expose(None, wtypes.text, status_code=204)
    def delete(self, uuid):
        """Detach; 204."""
        context = pecan.request.context
        # NOTE(v1): who may detach nothing learns nothing of what exists.
        policy.authorize('cyborg:accelerator:detach', None, context)
        current = self.conductor.get_accelerator(context, _checked(uuid))
        mine = [entry for entry in current['attachments']
                if entry.get('via') == 'v1']
        if mine and mine[0]['type'] == 'host':
            # NOTE(v1): a host attach is the administrators' to undo.
            policy.authorize('cyborg:accelerator:attach_host', None,
                             context)
        else:
            # NOTE(v1): an instance attach is its project's to undo; with
            # none, the conductor says why there is nothing to detach.
            project = (mine[0].get('project_id') if mine
                       else context.project_id)
            policy.authorize('cyborg:accelerator:detach',
                             {'project_id': project,
                              'user_id': context.user_id}, context)
        self.conductor.detach_accelerator(context, uuid)
        return wsme.api.Response(None, status_code=204, return_type=None)
