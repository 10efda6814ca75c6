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
    cfg.BoolOpt(
        'scrub_on_release',
        default=True,
        help='When the last accelerator request on an FPGA deployable '
             'unbinds, scrub it before it is offered again (Intel and '
             'Xilinx drivers): load default_image when it is set, else '
             'reset the functions guests get (function-level reset through '
             'their sysfs "reset" file). The capacity stays reserved while '
             'it runs; a failure marks the card failed.'),
    cfg.StrOpt(
        'default_image',
        default='',
        help='A local file with the image the FPGA drivers load onto a '
             'deployable when its last accelerator request unbinds (see '
             'scrub_on_release), with the same tool as programming: for '
             'Intel cards a green bitstream loaded by fpgaconf, for Xilinx '
             'cards a base image flashed by xbmgmt. A card that tool cannot '
             'program (on no FPGA kernel driver, or without its management '
             'function) then fails its scrub. Empty: no image; the '
             'functions are reset instead.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
