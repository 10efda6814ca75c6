"""Options of the [health] group: the device health checks of the agent."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'health', title='Device health checks',
    help='How the agent judges the health of the devices its drivers '
         'report, on every report interval. See the admin guide, "Device '
         'health".')

opts = [
    cfg.IntOpt(
        'aer_correctable_threshold',
        default=0,
        min=0,
        help='A PCIe function whose count of corrected AER errors '
             '(TOTAL_ERR_COR of aer_dev_correctable) reaches this number '
             'is degraded. The hardware corrected these errors, and the '
             'kernel counts them from the time it found the function, so '
             'pick a number well above what a healthy link gathers between '
             'reboots. 0 never judges them.'),
    cfg.BoolOpt(
        'check_link_speed',
        default=True,
        help='Degrade a PCIe function whose link trained below the speed '
             'both ends of it support (current_link_speed against the '
             'lowest max_link_speed on its path to the root port). GPUs '
             'lower their link speed when idle to save power, so the GPU '
             'driver never judges speed; a narrower link is judged '
             'whatever this says.'),
    cfg.BoolOpt(
        'use_nvml',
        default=True,
        help='Where the nvidia-ml-py package is installed and NVML '
             'initialises, also judge NVIDIA GPUs by NVML (uncorrected ECC '
             'errors, pages waiting for retirement, rows waiting for '
             'remapping) and sample their utilisation, memory, ECC, power '
             'and temperature through it. Without NVML only the sysfs '
             'checks run.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
