"""Reading the API's error envelope in tests, unit and functional alike."""

import json

#: The microversion from which error bodies carry a code.
CODES_VERSION = '2.12'
#: Headers that ask for error bodies with codes.
WITH_CODES = {'OpenStack-API-Version': 'accelerator %s' % CODES_VERSION}


def fault_of(body):
    """The WSME fault inside a decoded error envelope."""
    assert list(body) == ['error_message'], body
    return json.loads(body['error_message'])


def code_of(body):
    """The machine-readable code of a decoded error envelope (2.12+)."""
    return fault_of(body)['code']
