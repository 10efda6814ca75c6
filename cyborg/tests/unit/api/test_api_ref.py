"""The API reference (api-ref/source) documents every route the API serves.

The routes are found by walking the pecan controllers from the root, and
from the operations the policies list; each must appear as a
``.. rest_method::`` of the reference, and each documented route must
reach a handler. The samples, parameters and status codes the reference
names must exist. (That the samples match what the API answers is checked
by cyborg/tests/functional/test_api_samples.py.)
"""

import inspect
import json
import os
import re

import pecan
from pecan import rest
import pytest
import yaml

from cyborg import policies
from cyborg.api import microversion
from cyborg.api.controllers import root
from cyborg.api.controllers.v2 import devices

SOURCE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                      os.pardir, os.pardir, 'api-ref', 'source')
SAMPLES = os.path.join(SOURCE, 'samples')

_METHOD = re.compile(r'^\.\. rest_method:: (\S+) (\S+)\s*$', re.M)
_INCLUDE = re.compile(r'^\.\. literalinclude:: (\S+)\s*$', re.M)
_PARAM = re.compile(r'\{[^}]*\}')
_VERSIONS_ROW = re.compile(r'^   \* - (\d+\.\d+)\s*$', re.M)
# Section order os-api-ref requires of parameters.yaml.
_SECTIONS = ('header', 'path', 'query', 'body')


def _pages():
    return {name: open(os.path.join(SOURCE, name)).read()
            for name in sorted(os.listdir(SOURCE)) if name.endswith('.rst')}


def _directive_items(text, directive):
    """The ``- item`` lines of each ``.. <directive>::`` block, as
    (directive argument, [item text])."""
    found = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        prefix = '.. %s::' % directive
        if not line.startswith(prefix):
            continue
        items = []
        for item in lines[index + 1:]:
            if item.strip() == '' and not items:
                continue
            if not item.startswith('   - '):
                break
            items.append(item[len('   - '):].strip())
        found.append((line[len(prefix):].strip(), items))
    return found


def _normal(path):
    """A path with its parameters' names left out: /v2/devices/{}."""
    return _PARAM.sub('{}', path)


def _documented():
    """{(method, normal path)} of every ``rest_method`` of the reference."""
    return {(method, _normal(path)) for text in _pages().values()
            for method, path in _METHOD.findall(text)}


def _controllers(controller=root.RootController, path=''):
    """(path, controller class) of every REST controller, root first."""
    yield path, controller
    for name, member in inspect.getmembers_static(controller):
        if isinstance(member, rest.RestController):
            yield from _controllers(type(member), '%s/%s' % (path, name))


def _handlers(controller):
    """The names of a controller's exposed handlers."""
    return {name for name, member in inspect.getmembers_static(controller)
            if not name.startswith('_') and callable(member) and
            getattr(member, 'exposed', False)}


def _resolve(method, path, top=root.RootController):
    """(controller path, handler name) that serve ``method path``, as
    pecan's RestController routes it; None when nothing does."""
    segments = [s for s in path.split('?')[0].split('/') if s]
    controller, where = top, ''
    while segments:
        member = inspect.getattr_static(controller, segments[0], None)
        if not isinstance(member, rest.RestController):
            break
        controller = type(member)
        where += '/' + segments.pop(0)
    actions = getattr(controller, '_custom_actions', {})
    if segments and method in actions.get(segments[0], ()):
        name = segments[0]
    elif method == 'GET':
        name = 'get_one' if segments else (
            'get_all' if 'get_all' in _handlers(controller) else 'get')
    else:
        name = method.lower()
    return (where or '/', name) if name in _handlers(controller) else None


def _undocumented(top=root.RootController):
    """'handler /path' of every handler no documented route reaches."""
    reached = {_resolve(method, path, top) for method, path in _documented()}
    return ['%s %s' % (name, where or '/')
            for where, controller in _controllers(top)
            for name in sorted(_handlers(controller))
            if (where or '/', name) not in reached]


def test_every_handler_of_every_controller_is_documented():
    missing = _undocumented()
    assert not missing, ('handlers without a rest_method in api-ref/source: '
                         '%s' % ', '.join(missing))


def test_every_documented_route_is_served():
    unserved = sorted('%s %s' % route for route in _documented()
                      if _resolve(*route) is None)
    assert not unserved, 'documented routes nothing serves: %s' % unserved


def test_every_route_a_policy_names_is_documented():
    documented = _documented()
    missing = sorted(
        '%s %s (%s)' % (op['method'], op['path'], rule.name)
        for rule in policies.list_rules()
        for op in getattr(rule, 'operations', None) or ()
        if (op['method'], _normal(op['path'])) not in documented)
    assert not missing, 'policy operations not in api-ref: %s' % missing


def test_every_device_action_is_documented():
    documented = _documented()
    missing = [action for action in devices.ACTIONS
               if ('POST', '/v2/devices/{}/%s' % action) not in documented]
    assert not missing


def test_an_undocumented_route_is_found():
    class Extra(rest.RestController):
        @pecan.expose()
        def get_all(self):
            return ''

        @pecan.expose()
        def delete(self, uuid):
            return ''

    class Root(root.RootController):
        extra = Extra()

    assert _undocumented(Root) == ['delete /extra', 'get_all /extra']
    assert _resolve('GET', '/v2/nothing/here') is None
    assert _resolve('PUT', '/v2/devices/{uuid}') is None


@pytest.mark.parametrize('name', sorted(_pages()))
def test_samples_exist_and_are_json(name):
    for include in _INCLUDE.findall(_pages()[name]):
        path = os.path.join(SOURCE, include)
        assert os.path.isfile(path), '%s includes %s' % (name, include)
        with open(path) as sample:
            json.load(sample)


def test_every_sample_is_shown():
    shown = {os.path.normpath(include) for text in _pages().values()
             for include in _INCLUDE.findall(text)}
    files = {os.path.join('samples', name) for name in os.listdir(SAMPLES)}
    assert files - shown == set(), 'samples no page includes'


def _parameters():
    with open(os.path.join(SOURCE, 'parameters.yaml')) as stream:
        # NOTE(api-ref): versions such as 2.4 stay strings, as os-api-ref
        # reads them.
        return yaml.load(stream, Loader=yaml.BaseLoader)


def test_parameters_are_sorted_and_complete():
    params = _parameters()
    order = [(_SECTIONS.index(value['in']), key.lower())
             for key, value in params.items()]
    assert order == sorted(order), 'parameters.yaml is out of order'
    versions = {entry.version for entry in microversion.VERSIONS}
    for key, value in params.items():
        assert value.get('description', '').strip(), key
        assert value.get('type'), key
        assert value.get('required') in ('true', 'false'), key
        assert value.get('min_version', '2.0') in versions, key


def test_parameters_and_status_codes_used_exist():
    params = _parameters()
    with open(os.path.join(SOURCE, 'status.yaml')) as stream:
        codes = yaml.safe_load(stream)
    for name, text in _pages().items():
        for _arg, items in _directive_items(text, 'rest_parameters'):
            for item in items:
                _shown, ref = (part.strip() for part in item.rsplit(':', 1))
                assert ref in params, '%s: no parameter %s' % (name, ref)
        for _arg, items in _directive_items(text, 'rest_status_code'):
            for item in items:
                code, _sep, reason = item.partition(':')
                assert int(code) in codes, '%s: code %s' % (name, code)
                assert (reason.strip() or 'default') in codes[int(code)], (
                    '%s: %s' % (name, item))


def test_version_history_lists_every_microversion():
    rows = _VERSIONS_ROW.findall(_pages()['versions.rst'])
    assert rows == [entry.version for entry in microversion.VERSIONS]
