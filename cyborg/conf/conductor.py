"""Options of the [conductor] group: the database owner."""

from oslo_config import cfg

GROUP = cfg.OptGroup('conductor', title='Conductor options')

opts = [
    cfg.StrOpt(
        'topic',
        default='cyborg-conductor',
        help='RPC topic the conductors listen on. Every conductor of a '
             'deployment must use the same topic.'),
    cfg.IntOpt(
        'service_down_time',
        default=180,
        min=1,
        help='Seconds after its last report when a service is considered '
             'down. Keep it above twice [agent] report_interval.'),
    cfg.BoolOpt(
        'auto_activate_new_devices',
        default=False,
        help='Activate newly discovered devices at once: the agent runs the '
             'driver\'s install step and the device becomes ready without '
             'an operator. By default a new device stays inactive (its '
             'capacity reserved) until an operator activates it.'),
    cfg.IntOpt(
        'agent_rpc_timeout',
        default=120,
        min=1,
        help='Seconds the conductor waits for an agent to finish host-side '
             'work such as a driver\'s install step.'),
    cfg.IntOpt(
        'program_timeout',
        default=1200,
        min=1,
        help='Seconds the conductor waits for an agent to download an '
             'image from Glance and program a device with it (at bind or '
             'through PATCH /v2/deployables/{uuid}/program).'),
    cfg.IntOpt(
        'heartbeat_interval',
        default=30,
        min=1,
        help='Seconds between two liveness records of a conductor.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
