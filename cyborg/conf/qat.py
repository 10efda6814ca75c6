"""Options of the [intel_qat] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'intel_qat', title='Intel QAT driver (intel_qat_driver) options')

opts = [
    cfg.BoolOpt(
        'create_vfs',
        default=True,
        help='When a QAT physical function is activated and has no SR-IOV '
             'virtual functions yet, create as many as it supports '
             '(sriov_totalvfs), with host drivers kept off them '
             '(sriov_drivers_autoprobe 0). Activation also binds every VF '
             'that no driver holds to vfio-pci, so guests can get it.'),
    cfg.DictOpt(
        'extra_device_ids',
        default={},
        help='QAT physical functions to claim besides the built-in ones '
             '(dh895xcc, c3xxx, c62x, 4xxx/401xx/402xx, 420xx, 6xxx), as '
             '"<PF device id>:<VF device id>" pairs of hex ids, e.g. '
             '"4950:4951". Vendor 8086 is implied.'),
    cfg.BoolOpt(
        'offer_host_bound_functions',
        default=True,
        help='Offer every VF (and every PF without VFs) whatever kernel '
             'driver holds it: libvirt rebinds a function on a host driver '
             'such as c6xxvf or 4xxxvf to vfio-pci when it attaches it to '
             'a guest. Set it to false on hosts that use QAT themselves '
             '(the kernel crypto API, Intel\'s QAT software): then only '
             'functions bound to vfio-pci or qat_vfio_pci are offered, and '
             'a function bound to no driver waits for activation to bind '
             'it.'),
    cfg.BoolOpt(
        'scrub_on_release',
        default=True,
        help='When the last accelerator request on a QAT deployable '
             'unbinds, reset each function it lends to guests (its SR-IOV '
             'VFs, or the PF offered whole) through the function\'s sysfs '
             '"reset" file before it is offered again. The capacity stays '
             'reserved while it runs; a failure marks the PF\'s device '
             'failed.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
