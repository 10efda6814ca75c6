"""Checks an INI file against the oslo.config options a service registers."""

import configparser
import os

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from stevedore import named

from cyborg.conf import opts as cyborg_opts

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                     os.pardir, os.pardir, os.pardir))
GENERATOR_CONFIG = os.path.join(ROOT, 'etc', 'cyborg',
                                'cyborg-config-generator.conf')

# NOTE(devstack): configparser makes DEFAULT the defaults of every other
# section, oslo.config a group of its own; name no section the default.
_NO_DEFAULT_SECTION = '\x00'


def _dest(name):
    # Options are written with underscores whatever their declared name.
    return name.replace('-', '_')


def _group_name(group):
    if group is None:
        return 'DEFAULT'
    return getattr(group, 'name', group)


def _add(allowed, group, opts):
    names = allowed.setdefault(_group_name(group), {})
    for opt in opts:
        names.setdefault(_dest(opt.name), opt)


def generator_namespaces(path=GENERATOR_CONFIG):
    """The library namespaces oslo-config-generator documents for Cyborg."""
    with open(path) as conf:
        lines = [line.partition('=') for line in conf]
    return [value.strip() for key, _sep, value in lines
            if key.strip() == 'namespace' and value.strip() != 'cyborg']


def _library_opts(namespaces):
    manager = named.NamedExtensionManager(
        'oslo.config.opts', names=namespaces, invoke_on_load=True,
        on_missing_entrypoints_callback=_missing_namespace)
    return [group_opts for ext in manager for group_opts in ext.obj]


def _missing_namespace(names):
    raise LookupError('no oslo.config.opts entry point for %s'
                      % ', '.join(sorted(names)))


def cyborg_allowed_options():
    """{group: {option: Opt}} of every option cyborg.conf may set."""
    allowed = {}
    for group, opts in cyborg_opts.list_opts():
        _add(allowed, group, opts)
    for group, opts in _library_opts(generator_namespaces()):
        _add(allowed, group, opts)
    # NOTE(devstack): registered at run time rather than for the generator:
    # the password plugin's options once [keystone_authtoken] auth_type
    # names it.
    _add(allowed, 'keystone_authtoken',
         ks_loading.get_auth_plugin_conf_options('password'))
    return allowed


def nova_cyborg_allowed_options():
    """Nova's [cyborg] group: keystoneauth session and adapter options."""
    allowed = {}
    _add(allowed, 'cyborg', ks_loading.get_session_conf_options() +
         ks_loading.get_adapter_conf_options(include_deprecated=False))
    return allowed


def read_ini(path):
    """{section: {option: value}} of an INI file, DEFAULT included."""
    parser = configparser.RawConfigParser(
        default_section=_NO_DEFAULT_SECTION, interpolation=None)
    parser.optionxform = str
    parser.read(path)
    return {section: dict(parser.items(section))
            for section in parser.sections()}


def unknown_options(path, allowed, only=None):
    """'group.option' of each option in ``path`` that ``allowed`` lacks.

    :param only: the sections to check; all of them when None.
    """
    found = []
    for section, options in read_ini(path).items():
        if only is not None and section not in only:
            continue
        known = allowed.get(section)
        if known is None:
            found.append('[%s] (unknown group)' % section)
            continue
        found.extend('%s.%s' % (section, option) for option in options
                     if option not in known)
    return found


def bad_values(path, allowed):
    """'group.option: error' of each value its option's type refuses."""
    ini = read_ini(path)
    # NOTE(devstack): only the options the file sets are registered, so
    # that options required by the others (auth_url...) are not asked for.
    present = [(section, allowed[section][option])
               for section, options in ini.items() for option in options
               if option in allowed.get(section, {})]
    conf = cfg.ConfigOpts()
    for section, opt in present:
        conf.register_opt(opt, group=None if section == 'DEFAULT'
                          else section)
    conf([], project='devstack-check', default_config_files=[path])
    found = []
    for section, opt in present:
        try:
            _value(conf, section, opt.dest)
        except (ValueError, cfg.ConfigFileValueError) as exc:
            found.append('%s.%s: %s' % (section, _dest(opt.name), exc))
    return found


def _value(conf, section, dest):
    # Reading an option is what converts (and so checks) its value.
    return conf[dest] if section == 'DEFAULT' else conf[section][dest]
