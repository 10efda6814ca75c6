"""Options of the [intel_qat] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'intel_qat', title='Intel QAT driver (intel_qat_driver) options')

opts = []


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
