"""Options of the [huawei_ascend] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'huawei_ascend', title='Huawei Ascend driver (huawei_ascend_driver)')

opts = []


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
