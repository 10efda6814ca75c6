"""The decorator of every API handler: WSME types in and out, JSON only."""

import functools
import json

import pecan
import wsme
import wsme.api
import wsme.rest.args
import wsme.rest.json
import wsme.runtime
import wsme.types as wtypes

from cyborg import exception
from cyborg.api import microversion
from cyborg.api import validation

# NOTE(expose): handlers raise, and errors.FaultMiddleware answers every
# failure; wsmeext.pecan.wsexpose would turn exceptions into fault bodies of
# its own, so this decorator replaces it.


def expose(return_type=None, *arg_types, body=None, schema=None, path=None,
           body_required=True, status_code=200, envelope=None):
    """Expose a RestController handler.

    :param return_type: the WSME type of the response body; None for none.
    :param arg_types: WSME types of the handler's arguments in order: path
        segments first, then query parameters (by name).
    :param body: the WSME type of the request body, the handler's last
        argument.
    :param schema: the JSON Schema the body is checked against before WSME
        converts it (a ``microversion.ByVersion`` of schemas when it changes
        with the version); WSME types say what a body holds, the schema
        also what values are valid.
    :param path: how many leading arguments are path segments; by default
        the arguments without a default value.
    :param body_required: False when a request may come without a body
        (the body argument then gets its default).
    :param status_code: the status of a success.
    :param envelope: a key the body may also come wrapped in, as
        ``{"<envelope>": {...}}`` (openstacksdk wraps a resource's body in
        its resource key).
    """

    def decorate(func):
        wsme.signature(return_type, *arg_types, body=body,
                       status_code=status_code, ignore_extra_args=True,
                       rest_content_types=('json',))(func)
        funcdef = wsme.api.FunctionDefinition.get(func)
        funcdef.resolve_types(wsme.types.registry)
        arguments = list(funcdef.arguments)
        body_arg = arguments.pop() if body is not None else None
        segments_count = path if path is not None else sum(
            1 for arg in arguments if arg.mandatory)
        path_args = arguments[:segments_count]
        required = sum(1 for arg in path_args if arg.mandatory)
        query_names = {arg.name for arg in arguments[segments_count:]}

        # NOTE(expose): pecan routes by the handler's own signature; taking
        # path segments only as *segments, it never fills an argument from
        # the query string or from a JSON body's members.
        @functools.wraps(func)
        def handler(self, *segments):
            microversion.check_served(func)
            if len(segments) > len(path_args):
                raise exception.RouteNotFound()
            if len(segments) < required:
                # NOTE(expose): a collection's URL with the method of one
                # of its items (PATCH /v2/drivers).
                raise exception.MethodNotAllowed()
            kwargs = _query_args(funcdef, query_names)
            if body_arg is not None:
                kwargs[body_arg.name] = _body(body_arg, schema,
                                              body_required, envelope)
            for arg, value in zip(path_args, segments, strict=False):
                kwargs[arg.name] = wsme.rest.args.from_param(arg.datatype,
                                                             value)
            wsme.runtime.check_arguments(funcdef, (), kwargs)
            result = func(self, **kwargs)
            return _render(funcdef, result)

        # NOTE(expose): pecan and inspect must see (self, *segments), not
        # the signature functools.wraps points them to (or copied from a
        # microversion.versioned dispatcher).
        del handler.__wrapped__
        vars(handler).pop('__signature__', None)
        return pecan.expose(template='json',
                            content_type='application/json',
                            generic=False)(handler)

    return decorate


def _query_args(funcdef, names):
    # NOTE(expose): params, not GET: some clients send a DELETE's
    # parameters as a form body, which webob reads as parameters too.
    query = {key: value for key, value in pecan.request.params.items()
             if key in names or key.split('.')[0] in names}
    _args, kwargs = wsme.rest.args.args_from_params(funcdef, query)
    return {name: value for name, value in kwargs.items() if name in names}


def _body(argument, schema, required, envelope=None):
    raw = pecan.request.body
    if not raw:
        if required:
            raise exception.Invalid(reason='this request needs a JSON body')
        return argument.default
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise exception.Invalid(
            reason='the body is not JSON: %s' % exc) from None
    if envelope is not None and isinstance(document, dict) and \
            list(document) == [envelope] and \
            isinstance(document[envelope], dict):
        document = document[envelope]
    if isinstance(schema, microversion.ByVersion):
        schema = schema()
    if schema is not None:
        validation.validate(schema, document)
    return wsme.rest.json.fromjson(argument.datatype, document)


def _render(funcdef, result):
    status = funcdef.status_code
    return_type = funcdef.return_type
    if isinstance(result, wsme.api.Response):
        status = result.status_code
        if not isinstance(result.return_type, wtypes.UnsetType):
            return_type = result.return_type
        result = result.obj
    pecan.response.status = status
    if return_type is None or status == 204:
        pecan.request.pecan['content_type'] = None
        pecan.response.content_type = None
        return ''
    return wsme.rest.json.tojson(return_type, result)

