"""keystoneauth1 adapters built from a service's option group."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

CONF = cfg.CONF


def from_conf(group):
    """An adapter with the session, auth and adapter options of ``group``."""
    auth = ks_loading.load_auth_from_conf_options(CONF, group)
    session = ks_loading.load_session_from_conf_options(CONF, group,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        CONF, group, session=session, auth=auth)
