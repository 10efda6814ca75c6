"""What the install guide tells operators to configure, read from its pages.

The tests that run the real Nova and the DevStack plugin's tests take
Nova's options, the service users' roles and Cyborg's catalog endpoints
from here, so that the guide says what was tested: a change to one that
the other does not follow fails.
"""

import configparser
import os
import re
import shlex
import urllib.parse

GUIDE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'doc', 'source', 'install')

#: the values of the guide's examples that each deployment has its own of.
KEYSTONE_URL = 'https://keystone.example.org/v3'
NOVA_PASSWORD = 'NOVA_PASS'

_BLOCK = re.compile(r'^\.\. code-block:: (\w+)\n((?:\n|   .*\n)+)', re.M)


def blocks(page, language):
    """The text of each ``code-block`` of ``language`` on ``page``."""
    with open(os.path.join(GUIDE, page)) as handle:
        text = handle.read()
    return ['\n'.join(line[3:] for line in body.splitlines())
            for lang, body in _BLOCK.findall(text) if lang == language]


def _ini(text):
    parser = configparser.RawConfigParser(interpolation=None,
                                          default_section='\0')
    parser.optionxform = str
    parser.read_string(text)
    return {name: dict(parser.items(name)) for name in parser.sections()}


def nova_conf():
    """{section: {option: value}} of nova.conf as nova.rst gives it (its
    first INI block; commented options left out)."""
    return _ini(blocks('nova.rst', 'ini')[0])


def nova_conf_for(keystone_url, nova_password, region):
    """nova_conf() with a deployment's own values in place of the
    example's Keystone URL, Nova's password and region."""
    own = {KEYSTONE_URL: keystone_url, NOVA_PASSWORD: nova_password,
           'RegionOne': region}
    return {section: {name: own.get(value, value)
                      for name, value in options.items()}
            for section, options in nova_conf().items()}


def _commands(page, *prefix):
    for block in blocks(page, 'console'):
        for command in block.replace('\\\n', ' ').splitlines():
            words = shlex.split(command.lstrip('$ '))
            if words[:len(prefix)] == list(prefix):
                yield words[len(prefix):]


def _options(words):
    """({option: value}, [arguments]) of ``openstack`` command words."""
    options, arguments = {}, []
    words = iter(words)
    for word in words:
        if word.startswith('--'):
            options[word[2:]] = next(words)
        else:
            arguments.append(word)
    return options, arguments


def roles():
    """{user: set of roles in the ``service`` project} that the guide
    gives the service users (``openstack role add``)."""
    found = {}
    for page in ('prerequisites.rst', 'nova.rst'):
        for words in _commands(page, 'openstack', 'role', 'add'):
            options, (role,) = _options(words)
            assert options['project'] == 'service', options
            found.setdefault(options['user'], set()).add(role)
    return found


def accelerator_endpoints():
    """{interface: URL} of the catalog entries the guide creates for the
    ``accelerator`` service."""
    found = {}
    for words in _commands('prerequisites.rst', 'openstack', 'endpoint',
                           'create'):
        options, arguments = _options(words)
        service, interface, url = arguments
        if service == 'accelerator':
            found[interface] = url
    return found


def endpoint_path():
    """The path every accelerator endpoint of the guide ends with (the
    API's version, ``/v2``)."""
    paths = {urllib.parse.urlsplit(url).path
             for url in accelerator_endpoints().values()}
    (path,) = paths
    return path
