"""A recording stand-in for the keystoneauth1 Adapter the client uses."""

import collections
import json
from unittest import mock

import requests

from cyborg_cli import client

ENDPOINT = 'http://cyborg.test/accelerator/v2'
ROOT = 'http://cyborg.test/accelerator'

Call = collections.namedtuple('Call', 'method url headers body')
NO_BODY = object()


def response(status, body=None, headers=None, url=''):
    """A real requests.Response, as keystoneauth1 returns them."""
    made = requests.Response()
    made.status_code = status
    if body is None:
        made._content = b''
    elif isinstance(body, str):
        made._content = body.encode('utf-8')
    else:
        made._content = json.dumps(body).encode('utf-8')
    made.headers.update(headers or {})
    made.url = url
    return made


class FakeAdapter:
    """Answers each request with the next canned response, in order."""

    def __init__(self, *responses, endpoint=ENDPOINT):
        self.responses = list(responses)
        self.calls = []
        self.endpoint = endpoint

    def get_endpoint(self):
        return self.endpoint

    def request(self, url, method, headers=None, raise_exc=True, **kwargs):
        # NOTE(tests): the client maps errors itself; keystoneauth1 must
        # hand every response back.
        assert raise_exc is False
        self.calls.append(Call(method, url, dict(headers or {}),
                               kwargs.get('json', NO_BODY)))
        assert self.responses, 'unexpected request %s %s' % (method, url)
        answer = self.responses.pop(0)
        if not answer.url:
            answer.url = url
        return answer


def run(command_class, argv, *responses):
    """(what take_action returned, the requests it made)."""
    adapter = FakeAdapter(*responses)
    app = mock.Mock()
    app.client_manager.accelerator_ops = client.Client(adapter)
    command = command_class(app, None)
    parsed = command.get_parser('openstack test').parse_args(argv)
    result = command.take_action(parsed)
    assert not adapter.responses, 'canned responses left unused'
    return result, adapter.calls


def plain(values):
    """Cell values with osc-lib's formattable columns as plain data."""
    return tuple(value.machine_readable()
                 if hasattr(value, 'machine_readable') else value
                 for value in values)


def shown(names, values):
    """What a ShowOne shows, as {field: plain value}."""
    return dict(zip(names, plain(values), strict=True))
