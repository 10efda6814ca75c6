"""Options of the [upgrade_levels] group: RPC version pins for upgrades."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'upgrade_levels', title='RPC version pins of a rolling upgrade',
    help='While services of two releases run side by side, the newer ones '
         'must not send what the older ones cannot read. Set each option '
         'to the RPC API version that the oldest running service of that '
         'kind serves (the rpc_version column of the services table, or '
         'the "Service RPC versions" check of cyborg-status), on every '
         'host whose services send to it; remove the pins once every '
         'service runs the new release. See the upgrade guide.')

_VERSION = r'^[0-9]+\.[0-9]+$'

opts = [
    cfg.StrOpt(
        'conductor',
        regex=_VERSION,
        help='The highest conductor RPC API version this process sends '
             '(for example 1.5), and the object versions that conductor '
             'release knows. Set it on API hosts, agents and conductors '
             'while conductors of an older release still run. Unset: the '
             'newest version of this release.'),
    cfg.StrOpt(
        'agent',
        regex=_VERSION,
        help='The highest agent RPC API version the conductors send (for '
             'example 1.3). Set it on the conductors while agents of an '
             'older release still run. Unset: the newest version of this '
             'release.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
