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
    cfg.FloatOpt(
        'rpc_deadline_margin',
        default=2.0,
        min=0.0,
        help='Seconds a service that serves an RPC call gives its caller '
             'beyond the deadline the call carries (the caller\'s clock '
             'when it sent the call, plus its timeout) before it drops the '
             'call as answered already: the most the clocks of two hosts '
             'may disagree (NTP keeps them within milliseconds), plus the '
             'time a send may take to reach the broker. Whatever this '
             'says, a call is also dropped once its timeout has passed '
             'since this service took it, which needs no clocks in '
             'agreement. A clock behind the caller\'s by more than this '
             'only lets late work through (an ARQ created so is removed '
             'later, see [conductor] orphan_arq_age); one ahead by more '
             'drops calls whose callers still wait for less than the '
             'difference (the API answers them 503), unless it is a '
             'conductor that finds its clock off while the database '
             'server and the other conductors agree: it then judges by '
             'its clock less that skew.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
