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
        'arq_stuck_after',
        default=3600,
        min=1,
        help='Seconds after which "cyborg-status upgrade check" reports an '
             'accelerator request still in a transitional state '
             '(BindStarted or Deleting) as stuck. Conductors finish a bind '
             'on their own, within about program_timeout when an FPGA is '
             'programmed for it; keep this above that.'),
    cfg.IntOpt(
        'orphan_arq_age',
        default=3600,
        min=0,
        mutable=True,
        help='Seconds after which an accelerator request from a device '
             'profile that is still Initial, with no instance and no '
             'device bound, is an orphan: one whose creator gave up on it '
             '(an API call answered 503 whose conductor created it later, '
             'or a boot that failed between creating and binding). '
             'Orphans do not count against quotas; every conductor '
             'removes those it finds every five minutes, or every this many '
             'seconds where that is shorter (each one '
             'once, with its accelerator.arq.delete notification) and '
             '"cyborg-status upgrade check" reports them. Nova creates a '
             'server\'s requests once the scheduler has picked its host '
             'and binds them moments later, so an hour is far beyond any '
             'boot; keep it above the longest time any other client waits '
             'between creating requests and binding them. 0 removes '
             'nothing and counts every request (the status check then '
             'reports those older than an hour).'),
    cfg.IntOpt(
        'heartbeat_interval',
        default=30,
        min=1,
        help='Seconds between two liveness records of a conductor.'),
    cfg.IntOpt(
        'takeover_after',
        default=90,
        min=1,
        help='Seconds after the last liveness record of a conductor when '
             'the others adopt its unfinished accelerator request work '
             '(binds, and the release of handles after an unbind). Every '
             'conductor checks for such work every heartbeat_interval '
             'seconds; exactly one takes each piece and finishes it. Keep '
             'it above twice heartbeat_interval, or a conductor that is '
             'only slow to heartbeat loses its work (which is safe, but '
             'repeats the host-side work).'),
    cfg.FloatOpt(
        'clock_skew_threshold',
        default=10.0,
        min=0.1,
        help='Seconds by which a conductor\'s clock may differ from the '
             'database server\'s before the conductor logs a warning (once, '
             'and once more when it is back within this). Each conductor '
             'measures the difference at every heartbeat and records it in '
             'its service row, which GET /v2/conductors (API 2.11) shows '
             'and "cyborg-status upgrade check" checks against this. '
             'Liveness, takeover and every age Cyborg judges go by the '
             'database server\'s clock alone, so a skewed conductor takes '
             'nothing from live ones; its logs, the deadlines of the calls '
             'it makes and what its drivers time-stamp are still off by '
             'the skew. Keep the hosts in step with NTP.'),
    cfg.IntOpt(
        'list_cache_max_age',
        default=300,
        min=0,
        help='Seconds a conductor serves the device and deployable lists '
             'from memory at most. A write to them by any conductor ends '
             'that at once, and every cached list is checked against the '
             'database\'s row counts and last updates before it is served; '
             'this bounds how long a change no conductor saw (a hand-made '
             'fix in the database) can stay unseen. 0 reads every list '
             'from the database.'),
    cfg.IntOpt(
        'report_batch_size',
        default=64,
        min=1,
        help='Most agent reports one transaction applies. Reports that '
             'arrive while a batch is written are applied together in the '
             'next one, so that a bootstorm costs few transactions.'),
    cfg.FloatOpt(
        'report_batch_delay',
        default=0.1,
        min=0.0,
        max=5.0,
        help='Seconds the conductor waits, after an agent report arrives, '
             'for others to apply with it. Reports that arrive while a '
             'batch is written always wait for the next one. A report is '
             'answered this much later; in a bootstorm the larger batches '
             'save the conductors and the database a quarter of their '
             'work. 0 applies each report as soon as the conductor is '
             'free.'),
    cfg.IntOpt(
        'heartbeat_batch_size',
        default=1000,
        min=1,
        help='Most heartbeats of unchanged agents one UPDATE records.'),
    cfg.FloatOpt(
        'heartbeat_batch_delay',
        default=0.5,
        min=0.0,
        max=10.0,
        help='Seconds the conductor waits, after the heartbeat of an '
             'unchanged agent arrives, for others to record with it in one '
             'UPDATE. Agents wait this long for their answer; it is small '
             'beside [agent] report_interval.'),
    cfg.IntOpt(
        'health_interval',
        default=10,
        min=1,
        help='Seconds between two runs of the health loop, which returns '
             'to service the devices that have been healthy long enough '
             '(see health_recover_after).'),
    cfg.IntOpt(
        'health_recover_after',
        default=3,
        min=1,
        help='Consecutive healthy checks (one per report interval of the '
             'device\'s agent) after which a device that failed its health '
             'checks returns by itself to the status it had. An operator '
             'may return it sooner with enable.'),
    cfg.IntOpt(
        'health_flap_limit',
        default=6,
        min=2,
        help='Changes of a device\'s health into or out of failed, within '
             'health_flap_window, beyond which the device is flapping: it '
             'stays excluded until an operator enables it.'),
    cfg.IntOpt(
        'health_flap_window',
        default=600,
        min=1,
        help='Seconds over which health changes are counted against '
             'health_flap_limit.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
