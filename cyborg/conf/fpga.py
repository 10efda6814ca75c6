"""Options of the [fpga] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'fpga', title='FPGA drivers (intel_fpga_driver, xilinx_fpga_driver)')

opts = [
    cfg.StrOpt(
        'fpgaconf_path',
        default='/usr/bin/fpgaconf',
        help='The OPAE fpgaconf tool the Intel FPGA driver programs PAC '
             'cards with. It runs as root through privsep.'),
    cfg.StrOpt(
        'xbmgmt_path',
        default='/opt/xilinx/xrt/bin/xbmgmt',
        help='The XRT xbmgmt tool the Xilinx FPGA driver programs Alveo '
             'cards with. It runs as root through privsep.'),
    cfg.IntOpt(
        'program_timeout',
        default=600,
        min=1,
        help='Seconds a programming tool may run before the programming '
             'is given up as failed.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
