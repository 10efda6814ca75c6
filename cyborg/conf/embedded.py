"""Options of the [embedded_placement] group: cyborg-all-in-one's Placement."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'embedded_placement', title='Embedded Placement',
    help='cyborg-all-in-one serves OpenStack Placement itself (the '
         'openstack-placement WSGI application) unless [placement] '
         'auth_type names a real one. Other commands ignore this group.')

opts = [
    cfg.HostAddressOpt(
        'host',
        default='127.0.0.1',
        help='Address the embedded Placement listens on.'),
    cfg.PortOpt(
        'port',
        default=8778,
        help='Port the embedded Placement listens on (8778 is Placement\'s '
             'usual port).'),
    cfg.StrOpt(
        'connection',
        default='sqlite:///$state_path/placement.sqlite',
        secret=True,
        help='SQLAlchemy URL of the embedded Placement\'s database; its '
             'schema is created and upgraded at start.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
