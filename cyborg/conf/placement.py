"""Options of the [placement] group: how agents reach OpenStack Placement."""

from oslo_config import cfg

from cyborg.conf import utils

GROUP = cfg.OptGroup(
    'placement', title='Placement service',
    help='Agents write their host\'s accelerator providers to Placement '
         'with these credentials (keystoneauth1 session, auth and adapter '
         'options). When auth_type is unset the agent does not use '
         'Placement and logs a warning at start.')

_DEFAULTS = {'service_type': 'placement',
             'valid_interfaces': ['internal', 'public']}


def register_opts(conf):
    utils.register_ksa_opts(conf, GROUP, _DEFAULTS)


def list_opts():
    return {GROUP: utils.list_ksa_opts(_DEFAULTS)}
