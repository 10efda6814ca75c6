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
    cfg.IntOpt(
        'nvml_xid_window',
        default=3600,
        min=1,
        help='Seconds an Xid error NVML reported keeps judging its GPU. '
             'The Xid itself is an event NVML reports once; the lasting '
             'damage behind one (uncorrected ECC errors, pages or rows '
             'waiting for a reset) keeps failing the GPU through the '
             'other NVML readings until the GPU is reset.'),
    cfg.ListOpt(
        'nvml_xid_failed',
        item_type=cfg.types.Integer(min=0),
        default=[48, 61, 62, 64, 79, 95, 119, 120, 140],
        help='Xid errors that fail a GPU: the ones NVIDIA\'s Xid catalogue '
             'says need a GPU reset or a node drain (double-bit and '
             'uncontained ECC errors, a failed page retirement or row '
             'remapping, a GPU fallen off the bus, a halted '
             'micro-controller or GSP). Xids an application causes (13, '
             '31, 43, 45) judge nothing.'),
    cfg.ListOpt(
        'nvml_xid_degraded',
        item_type=cfg.types.Integer(min=0),
        default=[63, 74, 92, 94],
        help='Xid errors that degrade a GPU: a recorded page retirement or '
             'row remapping, an NVLink error, a high single-bit ECC error '
             'rate, a contained ECC error. An Xid in both lists fails.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
