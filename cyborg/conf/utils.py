"""keystoneauth1 option sets shared by the groups of other services."""

from keystoneauth1 import loading as ks_loading


def adapter_opts(defaults):
    """keystoneauth1's adapter options with this service's defaults."""
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    for opt in opts:
        if opt.dest in defaults:
            opt.default = defaults[opt.dest]
    return opts


def register_ksa_opts(conf, group, defaults):
    """Session, auth and adapter options of a service client's group."""
    conf.register_group(group)
    ks_loading.register_session_conf_options(conf, group.name)
    ks_loading.register_auth_conf_options(conf, group.name)
    conf.register_opts(adapter_opts(defaults), group=group)


def list_ksa_opts(defaults):
    """The same options for the sample config (password auth shown)."""
    return (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_auth_plugin_conf_options('password') +
            adapter_opts(defaults))
