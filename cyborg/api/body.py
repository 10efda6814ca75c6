"""Refuses unsound JSON bodies, and strings no database stores, before routing.
"""

import json
import urllib.parse

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


def _unstorable(text):
    """Why ``text`` cannot be stored, or None: a NUL (PostgreSQL's text
    refuses it) or a lone surrogate (no database encodes it: JSON's
    ``\\ud800`` escape parses to one)."""
    if '\x00' in text:
        return 'a NUL character'
    try:
        text.encode('utf-8')
    except UnicodeEncodeError as exc:
        return 'a lone surrogate (U+%04X)' % ord(text[exc.start])
    return None


def _shown(key):
    # NOTE(body): a field's name goes into the message and the log: its
    # unstorable characters as escapes.
    return key.encode('utf-8', 'backslashreplace').decode(
        'utf-8').replace('\x00', '\\x00')


def _strings(document):
    """(where, text) of every string of ``document``, keys included;
    ``where`` names it as ``groups[0].resources:FPGA`` would."""
    stack = [(document, '')]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            yield where or 'body', node
        elif isinstance(node, dict):
            for key, value in node.items():
                shown = _shown(key)
                name = '%s.%s' % (where, shown) if where else shown
                yield name + ' (its name)', key
                stack.append((value, name))
        elif isinstance(node, list):
            stack.extend((item, '%s[%d]' % (where, index))
                         for index, item in enumerate(node))


def _check_strings(document, what):
    for where, text in _strings(document):
        reason = _unstorable(text)
        if reason is not None:
            raise exception.UnstorableText(
                reason='%s %s holds %s, which cannot be stored' %
                       (what, where, reason))


def _check_query(environ):
    query = environ.get('QUERY_STRING', '')
    if '%00' not in query.lower():
        return
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True,
                                       errors='strict')
    except UnicodeDecodeError:
        # NOTE(body): not UTF-8 at all: the routes refuse it themselves.
        return
    for name, value in pairs:
        _check_strings({name: value}, 'query parameter')


def check(environ):
    """Raise the 4xx a body deserves, or return when it is sound JSON.

    WSME and webob parse bodies (XML, forms, multipart) while routing,
    even for GET, and fail with exceptions of their own; so every body is
    checked here first, whatever the method.
    """
    _check_query(environ)
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
        raise exception.MalformedBody(
            reason='the body is not JSON: %s' % str(exc)[:200]) from None
    if _depth(document) > MAX_DEPTH:
        raise exception.MalformedBody(
            reason='the body nests more than %d levels' % MAX_DEPTH)
    _check_strings(document, 'field')


class JsonBodyGuard:
    """WSGI middleware: only sound JSON bodies reach the application; the
    others raise, for errors.FaultMiddleware to answer."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        check(environ)
        return self.application(environ, start_response)
