"""Failed API calls as the exceptions osc-lib's shell prints to the user."""

import json
from typing import Any

from osc_lib import exceptions

# NOTE(errors): long enough for a proxy's one-line complaint, short enough
# not to pour an HTML error page onto the terminal.
_MAX_TEXT = 300
#: The newest microversion a server speaks, on every /v2 answer.
MAX_VERSION_HEADER = 'OpenStack-API-Maximum-Version'


class ApiError(exceptions.CommandError):
    """The API refused or failed a call; the text is what it said."""

    def __init__(self, status: int, message: str,
                 request_id: str | None = None,
                 max_version: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.request_id = request_id
        self.max_version = max_version


def _fault_message(envelope: str) -> str:
    """The faultstring inside Cyborg's error envelope, or the envelope."""
    try:
        fault = json.loads(envelope)
    except ValueError:
        return envelope
    if isinstance(fault, dict) and fault.get('faultstring'):
        return str(fault['faultstring'])
    return envelope


def message_of(response: Any) -> str:
    """What a failed response says, in the words of the API."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        envelope = body.get('error_message')
        if isinstance(envelope, str):
            return _fault_message(envelope)
        if isinstance(envelope, dict) and envelope.get('faultstring'):
            return str(envelope['faultstring'])
    text = ' '.join((response.text or '').split())
    if text:
        return text[:_MAX_TEXT]
    return 'The accelerator API answered HTTP %d.' % response.status_code


def from_response(response: Any) -> ApiError:
    """The exception for a 4xx or 5xx response."""
    return ApiError(response.status_code, message_of(response),
                    response.headers.get('x-openstack-request-id'),
                    response.headers.get(MAX_VERSION_HEADER))


def needs_microversion(refusal: ApiError, route: str,
                       version: str) -> ApiError:
    """The error for a server that refused (406) the microversion a
    command needs: which version, for what, and what the server speaks."""
    newest = (' (it speaks up to %s)' % refusal.max_version
              if refusal.max_version else '')
    message = ('%s needs accelerator API microversion %s, which this '
               'server does not support%s; upgrade Cyborg to use this '
               'command. The API said: %s' % (route, version, newest,
                                              refusal.message))
    return ApiError(refusal.status, message, refusal.request_id,
                    refusal.max_version)
