"""Options of the [gpu_devices] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'gpu_devices', title='NVIDIA GPU driver (nvidia_gpu_driver) options')

opts = []


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
