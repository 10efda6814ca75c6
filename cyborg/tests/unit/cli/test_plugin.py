"""The plugin's hooks, its endpoint handling, names and imports."""

import argparse
import ast
import configparser
import importlib
from importlib import metadata
import os
import sys
from unittest import mock

from keystoneauth1 import adapter as ksa_adapter
from osc_lib import exceptions
from osc_lib.command import command
import pytest

from cyborg_cli import client
from cyborg_cli import plugin

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
OUR_GROUP = 'openstack.%s.v1' % plugin.API_NAME
# NOTE(tests): the commands of python-cyborgclient 3.0.0 (and its older
# "accelerator list") and of python-openstackclient's in-tree accelerator
# module, for when neither is installed where the tests run.
OTHER_COMMANDS = frozenset((
    'accelerator list',
    'accelerator deployable list', 'accelerator deployable show',
    'accelerator deployable program',
    'accelerator device list', 'accelerator device show',
    'accelerator device enable', 'accelerator device disable',
    'accelerator device profile list', 'accelerator device profile create',
    'accelerator device profile delete', 'accelerator device profile show',
    'accelerator device attribute list',
    'accelerator device attribute create',
    'accelerator device attribute delete',
    'accelerator device attribute show',
    'accelerator arq list', 'accelerator arq create', 'accelerator arq delete',
    'accelerator arq show', 'accelerator arq bind', 'accelerator arq unbind',
))
ALLOWED_IMPORTS = frozenset(('cliff', 'cyborg_cli', 'keystoneauth1',
                             'osc_lib'))


def _setup_cfg_entry_points():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(REPO, 'setup.cfg'))
    groups = {}
    for group, lines in parser['entry_points'].items():
        entries = (line.split('=', 1) for line in lines.strip().splitlines())
        groups[group] = {name.strip(): target.strip()
                         for name, target in entries}
    return groups


def _installed_commands():
    """Command names of other distributions' OSC accelerator groups."""
    names = set()
    for distribution in metadata.distributions():
        for point in distribution.entry_points:
            if (point.group.startswith('openstack.') and
                    point.group != OUR_GROUP and
                    point.name.startswith('accelerator')):
                names.add(point.name.replace('_', ' '))
    return names


# --- hooks ------------------------------------------------------------------


def test_the_plugin_is_registered_beside_the_others():
    groups = _setup_cfg_entry_points()
    assert groups['openstack.cli.extension'] == {
        plugin.API_NAME: 'cyborg_cli.plugin'}
    # NOTE(tests): "accelerator" is python-cyborgclient's and OSC's.
    assert plugin.API_NAME != 'accelerator'
    assert plugin.API_VERSION_OPTION == 'os_%s_api_version' % plugin.API_NAME
    assert plugin.DEFAULT_API_VERSION in plugin.API_VERSIONS
    assert OUR_GROUP == 'openstack.accelerator_ops.v%s' % (
        plugin.DEFAULT_API_VERSION)


@pytest.mark.parametrize('region, interface, override', [
    ('RegionTwo', 'internal', 'http://cyborg.test:6666/v2'),
    ('', '', None),
])
def test_make_client_builds_an_adapter(region, interface, override):
    instance = mock.Mock(region_name=region, interface=interface)
    instance.get_configuration.return_value = {
        'accelerator_endpoint_override': override}
    made = plugin.make_client(instance)
    assert isinstance(made, client.Client)
    adapter = made.adapter
    assert isinstance(adapter, ksa_adapter.Adapter)
    assert adapter.session is instance.session
    assert adapter.service_type == 'accelerator'
    assert adapter.region_name == (region or None)
    assert adapter.interface == (interface or None)
    assert adapter.endpoint_override == override


def test_version_option(monkeypatch):
    monkeypatch.delenv('OS_ACCELERATOR_OPS_API_VERSION', raising=False)
    parser = plugin.build_option_parser(argparse.ArgumentParser())
    assert parser.parse_args([]).os_accelerator_ops_api_version == '1'
    given = parser.parse_args(['--os-accelerator-ops-api-version', '1'])
    assert given.os_accelerator_ops_api_version == '1'


@pytest.mark.parametrize('endpoint, root', [
    ('http://h/accelerator/v2', 'http://h/accelerator'),
    ('http://h/accelerator/v2/', 'http://h/accelerator'),
    ('http://h:6666/v1', 'http://h:6666'),
    ('http://h:6666/v2.5', 'http://h:6666'),
    ('http://h:6666', 'http://h:6666'),
    ('http://h/v2api', 'http://h/v2api'),
])
def test_api_root(endpoint, root):
    assert client.api_root(endpoint) == root


def test_no_endpoint_is_an_error():
    adapter = mock.Mock()
    adapter.get_endpoint.return_value = None
    with pytest.raises(exceptions.EndpointNotFound):
        client.Client(adapter).list_units()


# --- names ------------------------------------------------------------------


def test_command_names_clash_with_no_other_client():
    ours = {name.replace('_', ' ')
            for name in _setup_cfg_entry_points()[OUR_GROUP]}
    others = OTHER_COMMANDS | _installed_commands()
    assert ours and not ours & others
    # NOTE(tests): cliff takes the longest run of words that names a
    # command, so a name that is the start of another would shadow it.
    for mine in ours:
        for other in others | (ours - {mine}):
            assert not (other + ' ').startswith(mine + ' '), (mine, other)


def test_every_command_loads_and_has_help():
    for name, target in _setup_cfg_entry_points()[OUR_GROUP].items():
        module, _colon, attribute = target.partition(':')
        found = getattr(importlib.import_module(module), attribute)
        assert issubclass(found, command.Command), name
        assert found.__doc__ and found.__doc__.strip(), name
        # NOTE(tests): the entry point name is the command's words.
        assert name.startswith('accelerator_'), name


def test_cyborg_cli_imports_only_what_the_cli_venvs_have():
    package = os.path.join(REPO, 'cyborg_cli')
    for folder, _dirs, files in os.walk(package):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding='utf-8') as source:
                tree = ast.parse(source.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split('.')[0]
                    assert (top in ALLOWED_IMPORTS or
                            top in sys.stdlib_module_names), (path, module)
