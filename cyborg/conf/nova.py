"""Options of the [nova] group: how conductors reach Nova's compute API."""

from oslo_config import cfg

from cyborg.conf import utils

GROUP = cfg.OptGroup(
    'nova', title='Nova compute API',
    help='Conductors tell Nova that accelerator requests are bound (the '
         'accelerator-request-bound external event), and check that the '
         'instance of a non-admin /v1 attach belongs to the caller\'s '
         'project (GET /servers/{id}), with these credentials '
         '(keystoneauth1 session, auth and adapter options). The user '
         'needs the admin role: Nova\'s default policy lets the service '
         'role send the event, but only an administrator show another '
         'project\'s server. When auth_type is unset the event and the '
         'check are skipped with a log line, as in the embedded default.')

_DEFAULTS = {'service_type': 'compute',
             'valid_interfaces': ['internal', 'public']}


def register_opts(conf):
    utils.register_ksa_opts(conf, GROUP, _DEFAULTS)
    # NOTE(nova): a Nova that never answers must not hold a conductor
    # thread for ever; the events are not retried, so this bounds the loss,
    # and an attach waiting on the ownership check fails with 503.
    conf.set_default('timeout', 30, group=GROUP.name)


def list_opts():
    return {GROUP: utils.list_ksa_opts(_DEFAULTS)}
