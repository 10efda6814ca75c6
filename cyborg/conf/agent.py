"""Options of the [agent] group: discovery and reporting on compute hosts."""

from oslo_config import cfg

GROUP = cfg.OptGroup('agent', title='Agent options')

opts = [
    cfg.ListOpt(
        'enabled_drivers',
        default=['fake_driver'],
        help='Accelerator drivers the agent loads, by their entry point name '
             'in the cyborg.accelerator.driver namespace (for example '
             'fake_driver, pci_driver, nvidia_gpu_driver). An unknown name '
             'stops the agent at start.'),
    cfg.IntOpt(
        'report_interval',
        default=60,
        min=1,
        help='Seconds between two discovery passes of the agent. Each pass '
             'reports to the conductor; a pass that finds nothing new costs '
             'only a heartbeat.'),
    cfg.StrOpt(
        'sysfs_root',
        default='/sys',
        help='Root of the sysfs tree drivers read devices from. Tests and '
             'simulations point it at a fixture tree.'),
    cfg.IntOpt(
        'discovery_cache_max_age',
        default=600,
        min=0,
        help='Seconds the agent may answer a discovery pass with the '
             'devices of the last full pass, while the host\'s sysfs tree '
             '(PCI functions, their links and entries, the values drivers '
             'watch), the enabled drivers and the options are unchanged. '
             'Health checks still run on every pass. After this long every '
             'driver reads the host again even when nothing seems to have '
             'changed. 0 turns the cache off: every pass runs every '
             'driver.'),
    cfg.StrOpt(
        'resource_provider_name',
        help='Name of this host\'s compute node resource provider in '
             'Placement, under which the agent keeps one child provider per '
             'deployable. Defaults to [DEFAULT] host; set it when the compute '
             'service registers the node under another name (for example '
             'its FQDN).'),
    cfg.IntOpt(
        'placement_heal_interval',
        default=300,
        min=0,
        help='Seconds between two comparisons of this host\'s providers in '
             'Placement with what the agent last wrote. Drift (a deleted '
             'provider, a removed trait, a changed inventory) is repaired; '
             'allocations are never touched. The agent also heals at start. '
             '0 heals only at start.'),
    cfg.StrOpt(
        'metrics_listen',
        default='',
        help='Address and port the agent serves its devices\' telemetry '
             'on, in the Prometheus text format, as host:port (for example '
             '0.0.0.0:9470 or [::]:9470); GET /metrics answers. Empty, the '
             'default, serves nothing. The endpoint has no authentication: '
             'bind it to an address only the monitoring network reaches.'),
    cfg.FloatOpt(
        'metrics_max_age',
        default=5.0,
        min=0,
        help='Seconds a telemetry sample of a device is served again '
             'before its driver is asked for a new one, so that many '
             'scrapes (and API calls) in a short time read the hardware '
             'once. 0 samples on every request.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
