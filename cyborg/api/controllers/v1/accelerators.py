"""``/v1/accelerators``: assignable units, their specs, attach and detach."""

from oslo_utils import uuidutils
import pecan
from pecan import rest

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import validation
from cyborg.api import validation_ops
from cyborg.api.types import base as types_base
from cyborg.api.types import link
from cyborg.conductor import rpcapi as conductor_rpcapi

_PATH = 'v1/accelerators'


def _url(uuid):
    return '%s/%s/%s' % (link.public_url(), _PATH, uuid)


def _view(item):
    """What clients read of an accelerator (the revision is its ETag)."""
    shown = {key: item[key] for key in (
        'uuid', 'name', 'acc_specs', 'host', 'deployable_uuid',
        'device_uuid', 'attachments', 'created_at', 'updated_at')}
    shown['links'] = [{'href': _url(item['uuid']), 'rel': 'self'}]
    return shown


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


def _answer(item):
    pecan.response.headers['ETag'] = _etag(item)
    return _view(item)


def _checked(uuid):
    if not uuidutils.is_uuid_like(uuid):
        raise exception.AcceleratorNotFound(uuid=uuid)
    return uuid


class AcceleratorsController(rest.RestController):
    """Discovered deployables and operators' records, as the proposal's
    accelerators; plain pecan handlers, with errors in the envelope from
    the ErrorHook."""

    def __init__(self):
        self._conductor = None

    @property
    def conductor(self):
        # NOTE(v1): built on first use, once the transport exists.
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI()
        return self._conductor

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def get_all(self, **params):
        types_base.check_query(params, ())
        context = pecan.request.context
        policy.authorize('cyborg:accelerator:get_all', None, context)
        # NOTE(v1): the proposal names the list "accelerator".
        return {'accelerator': [_view(item) for item in
                                self.conductor.list_accelerators(context)]}

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def get_one(self, *args, **_members):
        uuid, rest = expose.segments(args, 1)
        if rest:
            pecan.abort(404)
        context = pecan.request.context
        policy.authorize('cyborg:accelerator:get_one', None, context)
        return _answer(self.conductor.get_accelerator(context,
                                                      _checked(uuid)))

    @pecan.expose(content_type='application/json')
    def post(self, *rest, **_members):
        """Create; 201 with an empty body and a Location header."""
        if rest:
            pecan.abort(405)
        context = pecan.request.context
        policy.authorize('cyborg:accelerator:create', None, context)
        name, uuid = validation_ops.accelerator_post(
            validation.json_body(pecan.request))
        item = self.conductor.create_accelerator(
            context, name, uuid, project_id=context.project_id)
        pecan.response.status = 201
        pecan.response.headers['Location'] = _url(item['uuid'])
        pecan.response.headers['ETag'] = _etag(item)
        return ''

    @pecan.expose(generic=False, template='json',
                  content_type='application/json')
    def put(self, *args, **_members):
        """``PUT /{uuid}`` attaches; ``PUT /{uuid}/{acc_spec}`` sets the
        spec (``acc_specs`` whole, or one key of it)."""
        uuid, acc_spec, rest = expose.segments(args, 2)
        if uuid is None:
            pecan.abort(405)
        if rest:
            raise exception.NotFound('No such resource: PUT /v1/accelerators'
                                     '/%s/%s' % (uuid, '/'.join(
                                         (acc_spec,) + rest)))
        _checked(uuid)
        context = pecan.request.context
        body = validation.json_body(pecan.request)
        if acc_spec is not None:
            return self._set_spec(context, uuid, acc_spec, body)
        current = self.conductor.get_accelerator(context, uuid)
        instance, host = validation_ops.attach(body, current)
        policy.authorize('cyborg:accelerator:attach_%s' % (
            'instance' if instance else 'host'), None, context)
        return _answer(self.conductor.attach_accelerator(
            context, uuid, instance_uuid=instance, host=host,
            project_id=context.project_id))

    def _set_spec(self, context, uuid, key, body):
        policy.authorize('cyborg:accelerator:update_spec', None, context)
        key, value = validation_ops.spec_put(key, body)
        return _answer(self.conductor.update_accelerator_spec(
            context, uuid, key, value, _if_match(pecan.request)))

    @pecan.expose(content_type='application/json')
    def delete(self, *args, **_members):
        """Detach; 204."""
        uuid, rest = expose.segments(args, 1)
        if uuid is None or rest:
            pecan.abort(405)
        context = pecan.request.context
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
        pecan.response.status = 204
        return ''
