"""Options of the [fpga] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'fpga', title='FPGA drivers (intel_fpga_driver, xilinx_fpga_driver)')

opts = []


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
