"""Options of the [intel_qat] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'intel_qat', title='Intel QAT driver (intel_qat_driver) options')

opts = [
    cfg.BoolOpt(
        'create_vfs',
        default=True,
        help='When a QAT physical function is installed and has no SR-IOV '
             'virtual functions yet, create as many as it supports '
             '(sriov_totalvfs), so its capacity is offered as one '
             'accelerator per VF instead of the whole PF.'),
    cfg.DictOpt(
        'extra_device_ids',
        default={},
        help='QAT physical functions to claim besides the built-in ones '
             '(c62x, dh895xcc, c3xxx, 4xxx/401xx/402xx), as '
             '"<PF device id>:<VF device id>" pairs of hex ids, e.g. '
             '"4946:4947". Vendor 8086 is implied.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
