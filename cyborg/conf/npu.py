"""Options of the [huawei_ascend] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'huawei_ascend', title='Huawei Ascend driver (huawei_ascend_driver)')

opts = [
    cfg.ListOpt(
        'device_ids',
        default=['d100', 'd500', 'd801', 'd802'],
        help='PCI device ids (hex, vendor 19e5) of the Ascend NPUs the '
             'driver claims: d100 Ascend 310, d500 Ascend 310P, d801 '
             'Ascend 910, d802 Ascend 910B.'),
    cfg.StrOpt(
        'resource_class',
        default='CUSTOM_NPU',
        help='Placement resource class of the Ascend deployables: a '
             'standard class or a custom one (a name that is not '
             'standard is prefixed with CUSTOM and an underscore).'),
    cfg.BoolOpt(
        'scrub_on_release',
        default=True,
        help='When the last accelerator request on an Ascend NPU unbinds, '
             'reset the function (function-level reset through its sysfs '
             '"reset" file) before it is offered again. The capacity stays '
             'reserved while it runs; a failure marks the NPU failed.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
