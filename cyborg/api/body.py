"""Refuses request bodies that are not sound JSON before anything parses them.
"""

import json

import webob

from cyborg import exception
from cyborg.api import errors

#: Deeper bodies than this are refused: no request of this API nests more
#: than a few levels, and parsers recurse on nesting.
MAX_DEPTH = 32


# NOTE(body): webob parses form bodies safely and pecan takes their fields
# as query parameters, which some clients rely on (a DELETE with a form).
_FORM = 'application/x-www-form-urlencoded'


def _media_type(environ):
    return environ.get('CONTENT_TYPE', '').split(';')[0].strip().lower()


def _is_json(media_type):
    return media_type in ('', errors.JSON) or media_type.endswith('+json')


def _depth(document):
    deepest, stack = 0, [(document, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        children = (node.values() if isinstance(node, dict) else
                    node if isinstance(node, list) else ())
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check(environ):
    """Raise the 4xx a body deserves, or return when it is sound JSON.

    WSME and webob parse bodies (XML, forms, multipart) while routing,
    even for GET, and fail with exceptions of their own; so every body is
    checked here first, whatever the method.
    """
    request = webob.Request(environ)
    media_type = _media_type(environ)
    body = request.body if request.is_body_readable else b''
    if not body:
        if not _is_json(media_type) and media_type != _FORM:
            # NOTE(body): nothing to read, but webob would still parse a
            # multipart type's boundary while pecan routes.
            environ.pop('CONTENT_TYPE', None)
        return
    if media_type == _FORM:
        return
    if not _is_json(media_type):
        raise exception.UnsupportedMediaType(media_type=media_type)
    try:
        document = json.loads(body.decode('utf-8'))
    except (ValueError, RecursionError) as exc:
        raise exception.Invalid(
            reason='the body is not JSON: %s' % str(exc)[:200]) from None
    if _depth(document) > MAX_DEPTH:
        raise exception.Invalid(reason='the body nests more than %d levels'
                                       % MAX_DEPTH)


class JsonBodyGuard:
    """WSGI middleware: only sound JSON bodies reach the application; the
    others raise, for errors.FaultMiddleware to answer."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        check(environ)
        return self.application(environ, start_response)
