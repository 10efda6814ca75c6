"""Options of the [DEFAULT] group."""

import socket

from oslo_config import cfg

opts = [
    cfg.StrOpt(
        'host',
        default=socket.gethostname(),
        sample_default='localhost',
        help='Name of this node. Agents listen for RPC on this name and '
             'record it as the hostname of the devices they discover, so it '
             'must be unique among the agents of a deployment and should '
             'match the compute node name that Nova uses.'),
    cfg.StrOpt(
        'state_path',
        default='/var/lib/cyborg',
        help='Directory where Cyborg keeps state: the embedded SQLite '
             'database and the agent\'s local cache of what it discovered.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
