"""Options of the [generic_driver] group and the [generic_backend_<name>]."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'generic_driver', title='Generic driver (generic_driver) options',
    help='The generic driver reports any PCI accelerator it is configured '
         'for, one backend at a time, and is the model vendor drivers '
         'follow.')

opts = [
    cfg.ListOpt(
        'backends',
        default=[],
        help='Names of the backends the generic driver reports (letters, '
             'digits and underscores). Each backend is configured in its '
             'own group [generic_backend_<name>], with the options the '
             'sample lists under [generic_backend_<name>]. A PCI function '
             'belongs to the first backend in this list that selects it. '
             'Empty: the driver reports nothing.'),
    cfg.BoolOpt(
        'scrub_on_release',
        default=True,
        help='When the last accelerator request on a deployable of any '
             'backend unbinds, reset each function its attach handles pass '
             'through (function-level reset through the sysfs "reset" file) '
             'before it is offered again. The capacity stays reserved while '
             'it runs; a failure marks the device failed.'),
]

BACKEND_GROUP_PREFIX = 'generic_backend_'

backend_opts = [
    cfg.StrOpt(
        'device_type',
        help='Cyborg device type of the backend\'s devices: FPGA, GPU, '
             'AICHIP, QAT, NIC, SSD, NVME or PCI. Default: derived from '
             'each function\'s PCI class code (3D controllers are GPU, '
             'processing accelerators AICHIP, network controllers NIC...).'),
    cfg.StrOpt(
        'vendor_id',
        help='PCI vendor id (hex, with or without 0x, e.g. 8086) of the '
             'functions the backend selects. A backend sets vendor_id, '
             'device_addresses or both.'),
    cfg.ListOpt(
        'product_ids',
        default=[],
        help='PCI device ids (hex) of the functions the backend selects, '
             'within vendor_id, which they need. Empty: any device of the '
             'vendor.'),
    cfg.ListOpt(
        'device_addresses',
        default=[],
        help='PCI addresses (e.g. 0000:3b:00.0) of the functions the '
             'backend selects. With vendor_id, a function must match both. '
             'Empty: any address.'),
    cfg.StrOpt(
        'resource_class',
        help='Placement resource class of the backend\'s deployables: a '
             'standard class or a custom one (a name that is not standard '
             'is prefixed with CUSTOM and an underscore). Default: '
             'CUSTOM_<backend name in upper case>.'),
    cfg.ListOpt(
        'traits',
        default=[],
        help='Placement traits the backend\'s deployables carry besides '
             'OWNER_CYBORG (names that are not standard are prefixed with '
             'CUSTOM and an underscore).'),
    cfg.ListOpt(
        'services',
        default=[],
        help='Services the backend\'s devices offer, as the API shows them, '
             'e.g. crypto.sym, compression, inference.'),
    cfg.StrOpt(
        'host_driver',
        help='Kernel driver that attaching a deployable to the host binds '
             'its functions (the SR-IOV VFs of a card that has them) to, '
             'e.g. c6xxvf. Unset: the backend cannot be attached to the '
             'host.'),
    cfg.StrOpt(
        'kernel_module',
        help='Kernel module the backend needs; installing the driver loads '
             'it with modprobe unless it is loaded already.'),
]

# NOTE(generic): the sample config and the option reference show the
# per-backend options once, under this placeholder name; the real groups
# are registered per backend at run time.
TEMPLATE_GROUP = cfg.OptGroup(
    BACKEND_GROUP_PREFIX + '<name>',
    title='One backend of the generic driver',
    help='Copy this group once per name in [generic_driver] backends, '
         'replacing <name> with the backend\'s name.')


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def backend_group_name(backend):
    return BACKEND_GROUP_PREFIX + backend


def register_dynamic_opts(conf):
    """Register a [generic_backend_<name>] group for each backend.

    The group names depend on another option's value, so they are known
    only after the configuration is parsed. Registering again is harmless.
    """
    for backend in conf.generic_driver.backends:
        register_backend_group(conf, backend)


def register_backend_group(conf, backend):
    """Register the [generic_backend_<name>] group of one backend."""
    group = cfg.OptGroup(backend_group_name(backend),
                         title='Generic driver backend %s' % backend)
    conf.register_group(group)
    conf.register_opts(backend_opts, group=group)


def list_opts():
    return {GROUP: opts, TEMPLATE_GROUP: backend_opts}
