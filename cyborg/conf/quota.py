"""Options of the [quota] group: how many accelerators a project may hold."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'quota', title='Accelerator quotas',
    help='Limits on the accelerators a project holds, counted per resource '
         'class as units of its accelerator requests. See the admin guide, '
         '"Quotas".')

FLAT = 'flat'
UNIFIED_LIMITS = 'unified_limits'

opts = [
    cfg.StrOpt(
        'driver',
        default=FLAT,
        choices=[
            (FLAT, 'Limits from [quota] limits in this file, the same for '
                   'every project; for deployments without Keystone.'),
            (UNIFIED_LIMITS, 'Keystone unified limits through oslo.limit: '
                             'a registered limit per resource (class:FPGA, '
                             'class:VGPU, ...) for Cyborg\'s service, and '
                             'project overrides; [oslo_limit] says how to '
                             'reach Keystone.')],
        help='Where the limits come from.'),
    cfg.DictOpt(
        'limits',
        default={},
        help='With the flat driver: units of each resource class one '
             'project may hold, e.g. "FPGA:4,VGPU:8,CUSTOM_QAT:16". A class '
             'not listed, or a negative limit, is unlimited.'),
    cfg.BoolOpt(
        'recheck_quota',
        default=True,
        help='Check the limits again after accelerator requests were '
             'written, and delete them again when the project went over: '
             'two requests at the same time each pass the first check, '
             'and only the second one stops the project going over its '
             'limit. Off saves a count per request and lets concurrent '
             'requests overshoot.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
