"""Options of the [placement] group: how agents reach OpenStack Placement."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = cfg.OptGroup(
    'placement', title='Placement service',
    help='Agents write their host\'s accelerator providers to Placement '
         'with these credentials (keystoneauth1 session, auth and adapter '
         'options). When auth_type is unset the agent does not use '
         'Placement and logs a warning at start.')

_DEFAULTS = {'service_type': 'placement',
             'valid_interfaces': ['internal', 'public']}


def _adapter_opts():
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    for opt in opts:
        if opt.dest in _DEFAULTS:
            opt.default = _DEFAULTS[opt.dest]
    return opts


def register_opts(conf):
    conf.register_group(GROUP)
    ks_loading.register_session_conf_options(conf, GROUP.name)
    ks_loading.register_auth_conf_options(conf, GROUP.name)
    conf.register_opts(_adapter_opts(), group=GROUP)


def list_opts():
    return {GROUP: (ks_loading.get_session_conf_options() +
                    ks_loading.get_auth_common_conf_options() +
                    ks_loading.get_auth_plugin_conf_options('password') +
                    _adapter_opts())}
