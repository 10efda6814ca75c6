"""Options of the [fpga] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'fpga', title='FPGA drivers (intel_fpga_driver, xilinx_fpga_driver)')

opts = [
    cfg.StrOpt(
        'fpgaconf_path',
        default='/usr/bin/fpgaconf',
        help='The OPAE fpgaconf tool the Intel FPGA driver programs cards '
             'bound to OPAE\'s out-of-tree intel-fpga-pci kernel driver '
             'with, given the PF\'s --bus, --device and --function. It '
             'runs as root through privsep.'),
    cfg.StrOpt(
        'dfl_fpgaconf_path',
        default='/usr/bin/fpgaconf',
        help='The OPAE fpgaconf tool the Intel FPGA driver programs cards '
             'bound to the upstream DFL kernel driver (dfl-pci) with, '
             'given the PF\'s --segment, --bus, --device and --function. '
             'It must come from an OPAE release that supports the DFL '
             'driver (it loads the image through /dev/dfl-fme.N); point '
             'it elsewhere than fpgaconf_path when a host keeps an older '
             'OPAE for intel-fpga-pci cards. It runs as root through '
             'privsep.'),
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
