"""Exceptions to HTTP status, and the one middleware that answers errors.

Clients (python-cyborgclient, Nova) parse ``{"error_message": "<s>"}`` where
``<s>`` is itself the JSON of a WSME fault: ``faultcode``, ``faultstring``
and ``debuginfo``. Handlers, hooks and the other middleware raise; only
``FaultMiddleware`` turns an exception, or an error response another layer
wrote (keystonemiddleware's 401, the size limit's 413, pecan's 404 and
405), into that envelope. From microversion 2.12 on /v2 the fault also holds
``code``, the stable name of the error (``cyborg.device.not_found``), which
the exception class states (see cyborg/exception.py).
"""

import json

from kombu import exceptions as kombu_exceptions
import microversion_parse
from oslo_log import log as logging
import oslo_messaging as messaging
import webob
import webob.exc
import wsme.exc

from cyborg import exception
from cyborg.api import microversion

LOG = logging.getLogger(__name__)

JSON = 'application/json'
#: Seconds a client is told to wait before retrying a 503. NOTE(errors):
#: services reconnect within about 15 s of the database or the broker
#: coming back, so a few retries span that.
RETRY_AFTER = 5
GENERIC_MESSAGE = ('The server could not complete the request because of an '
                   'internal error.')

# NOTE(errors): the one mapping from exception families to HTTP status;
# the most specific family is listed first. Anything else is a bug: 500.
STATUS_BY_FAMILY = (
    (exception.Invalid, 400),
    (exception.NotAuthorized, 401),
    (exception.Forbidden, 403),
    (exception.NotFound, 404),
    (exception.MethodNotAllowed, 405),
    (exception.NotAcceptable, 406),
    (exception.Conflict, 409),
    (exception.BodyTooLarge, 413),
    (exception.UnsupportedMediaType, 415),
    (exception.Locked, 423),
    (exception.ServiceUnavailable, 503),
)

#: The microversion from which error bodies carry a code.
CODES_SINCE = microversion_parse.parse_version_string('2.12')

# NOTE(errors): what a bare status from another layer stands for (pecan's
# 404 of an unknown route, its 405 and 406, keystonemiddleware's 401, the
# size limit's 413, WSME's 400), for its code.
_BARE_ERRORS = {
    400: exception.Invalid,
    401: exception.NotAuthorized,
    403: exception.Forbidden,
    404: exception.RouteNotFound,
    405: exception.MethodNotAllowed,
    406: exception.ContentNotAcceptable,
    409: exception.Conflict,
    413: exception.BodyTooLarge,
    415: exception.UnsupportedMediaType,
    503: exception.ServiceUnavailable,
}

# NOTE(errors): webob's generic explanation of these says nothing useful.
_BETTER_MESSAGES = {status: _BARE_ERRORS[status].msg_fmt
                    for status in (405, 406)}


def status_for(exc):
    """The HTTP status of a Cyborg exception; 500 for anything else."""
    for family, status in STATUS_BY_FAMILY:
        if isinstance(exc, family):
            return status
    return 500


def fault_code(status):
    return 'Client' if status < 500 else 'Server'


def code_for_status(status):
    """The code of an error known only by its status; a 500 has none."""
    return _BARE_ERRORS.get(status, exception.CyborgException).code


def describe(exc):
    """(status, message safe to show, code) for an exception being handled.

    Call it from an ``except`` block: a server-side failure is logged here
    with its traceback, and never described to the client.
    """
    if isinstance(exc, messaging.MessagingTimeout):
        # NOTE(errors): the conductor is down or overloaded; the client may
        # retry, so this is not a bug (500) but unavailability (503).
        LOG.warning('No answer from the conductor: %s', exc)
        exc = exception.ConductorUnavailable(
            reason='the conductor did not answer in time')
    elif isinstance(exc, (messaging.MessageDeliveryFailure,
                          messaging.MessageUndeliverable,
                          kombu_exceptions.OperationalError)):
        # NOTE(errors): the message broker is unreachable (its retries
        # are bounded by the RPC client), or no conductor listens. While
        # the broker is down, oslo.messaging's RabbitMQ driver lets
        # kombu's OperationalError (connection refused) out of a call
        # that needs a new connection from its pool.
        LOG.warning('The conductor could not be reached: %s', exc)
        exc = exception.ConductorUnavailable(
            reason='the conductor could not be reached')
    if isinstance(exc, exception.CyborgException):
        status = status_for(exc)
        if status < 500 or status == 503:
            return status, exc.message, exc.code
    elif isinstance(exc, wsme.exc.ClientSideError):
        return exc.code, exc.faultstring, code_for_status(exc.code)
    elif isinstance(exc, webob.exc.WSGIHTTPException) and exc.code < 500:
        return (exc.code, exc.detail or http_message(exc.code),
                code_for_status(exc.code))
    LOG.exception('Unexpected error while handling the request: %s', exc)
    # NOTE(errors): the code of an unexpected error would say what the
    # message hides.
    return 500, GENERIC_MESSAGE, code_for_status(500)


def http_message(status):
    """A sentence for a bare HTTP status some layer produced."""
    if status in _BETTER_MESSAGES:
        return _BETTER_MESSAGES[status]
    known = webob.exc.status_map.get(status)
    return known.explanation if known else 'HTTP error %s.' % status


def envelope(status, message, code=None):
    """The error body as bytes; ``code`` only where the request's version
    shows codes (None keeps the body of older microversions exactly)."""
    fault = {'faultcode': fault_code(status), 'faultstring': message,
             'debuginfo': None}
    if code is not None:
        fault['code'] = code
    return json.dumps({'error_message': json.dumps(fault)}).encode('utf-8')


def shows_codes(environ, versioned):
    """Whether the error body of this request carries a code.

    Only /v2 at 2.12 or later does. A request refused before its version
    was negotiated (401, 413, a bad body or header) is judged by the
    version it asked for; a header that cannot be read asks for none
    below 2.12.
    """
    if not versioned:
        return False
    version = environ.get(microversion.ENVIRON_KEY)
    if version is None:
        version = microversion.requested(webob.Request(environ).headers)
    return version is None or version >= CODES_SINCE


def error_response(exc, with_code=False):
    """A webob response in the envelope for an exception being handled."""
    status, message, code = describe(exc)
    response = webob.Response(status=status, content_type=JSON,
                              charset=None)
    response.body = envelope(status, message, code if with_code else None)
    return response


def _retry_after(response):
    # NOTE(errors): a 503 is temporary; say when to try again (RFC 9110).
    if response.status_int == 503 and 'Retry-After' not in response.headers:
        response.headers['Retry-After'] = str(RETRY_AFTER)
    return response


def _message_from_json(body):
    """The message of an error body some layer already wrote as JSON."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if 'faultstring' in data:
        return data['faultstring']
    error = data.get('error')
    if isinstance(error, dict):  # keystonemiddleware's 401
        return error.get('message') or error.get('title')
    return data.get('description') or data.get('title')  # pecan's JSON


def _message_from_text(body):
    """webob's plain-text error: the status line, then the explanation."""
    lines = [line.strip() for line in body.splitlines()[1:]]
    return ' '.join(line for line in lines if line) or None


def _is_envelope(body):
    try:
        return isinstance(json.loads(body).get('error_message'), str)
    except (ValueError, AttributeError):
        return False


def rewrap(response, with_code=False):
    """Put an error response some other layer produced into the envelope."""
    status = response.status_int
    body = response.body or b''
    if response.content_type == JSON and _is_envelope(body):
        return response
    message = None
    if status in _BETTER_MESSAGES:
        message = _BETTER_MESSAGES[status]
    elif status < 500 or status == 503:
        if response.content_type == JSON:
            message = _message_from_json(body)
        elif response.content_type == 'text/plain':
            message = _message_from_text(body.decode('utf-8', 'replace'))
        if not message:
            message = http_message(status)
    else:
        # NOTE(errors): a 5xx body from a lower layer may hold a traceback.
        LOG.error('Replacing the body of a %s response from a lower layer.',
                  response.status)
        message = GENERIC_MESSAGE
    response.content_type = JSON
    response.charset = None
    response.content_encoding = None
    code = code_for_status(status) if with_code else None
    response.body = envelope(status, str(message), code)
    return response


class FaultMiddleware:
    """Makes every exception and every 4xx/5xx response an envelope."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        request = webob.Request(environ)
        # NOTE(errors): read before the app runs, which may route on it.
        versioned = microversion.is_versioned(environ.get('PATH_INFO', ''))
        try:
            response = request.get_response(self.application)
        except Exception as exc:
            response = error_response(exc, shows_codes(environ, versioned))
        if response.status_int >= 400:
            response = _retry_after(
                rewrap(response, shows_codes(environ, versioned)))
        return response(environ, start_response)
