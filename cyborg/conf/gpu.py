"""Options of the [gpu_devices] group and the per-type [vgpu_<type>]."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'gpu_devices', title='NVIDIA GPU driver (nvidia_gpu_driver) options')

opts = [
    cfg.ListOpt(
        'enabled_vgpu_types',
        default=[],
        help='Mediated device types (for example nvidia-222) the NVIDIA GPU '
             'driver offers as vGPUs (resource class VGPU). For each type a '
             'group [vgpu_<type>] may list in device_addresses the GPUs, or '
             'their SR-IOV VFs, that offer it. Each GPU offers a type as one '
             'deployable, whether the type sits on the GPU itself or on its '
             'SR-IOV VFs (one vGPU per VF), with at most the max_instance '
             "that the type's description gives. A GPU that offers an "
             'enabled type, or that holds a vGPU, is not offered as a whole '
             '(PGPU). A GPU that holds vGPUs of one type that no enabled '
             'type selects offers the rest of that type, the vGPUs that '
             'exist counted. Empty: every GPU that holds no vGPU is offered '
             'as a PGPU.'),
    cfg.BoolOpt(
        'filter_sriov_vfs',
        default=True,
        help='Do not offer the SR-IOV virtual functions of GPUs as PGPUs; '
             'the physical GPU is offered instead. When false, the VFs of a '
             'GPU that has them are offered one by one in place of the '
             'physical GPU, except those that hold a vGPU. VFs are still '
             'used as vGPU parents.'),
    cfg.BoolOpt(
        'scrub_on_release',
        default=True,
        help='When the last accelerator request on a deployable unbinds, '
             'scrub it before it is offered again: a GPU passed through '
             'whole (PGPU) gets a function-level reset through its sysfs '
             '"reset" file; for vGPUs, whose mediated devices were removed '
             'at unbind, each parent function (the GPU, or its SR-IOV VF) '
             'that holds no other vGPU is reset; one that still holds one, '
             'or a GPU with SR-IOV VFs (which its reset would reset too), '
             'is left alone. The capacity stays reserved while it runs; a '
             'failure marks the GPU failed.'),
]

VGPU_GROUP_PREFIX = 'vgpu_'

vgpu_opts = [
    cfg.ListOpt(
        'device_addresses',
        default=[],
        help='PCI addresses (for example 0000:3b:00.0) of the GPUs, or of '
             'their SR-IOV VFs, that offer this vGPU type. A GPU address '
             'also selects its VFs. vGPUs of the type on VFs left out still '
             "count against the GPU's max_instance. Empty: every GPU that "
             'has the type.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def vgpu_group_name(vgpu_type):
    return VGPU_GROUP_PREFIX + vgpu_type


def register_dynamic_opts(conf):
    """Register a [vgpu_<type>] group for each of enabled_vgpu_types.

    The group names depend on another option's value, so they are known
    only after the configuration is parsed (as Nova's [vgpu_<type>]).
    Registering again is harmless.
    """
    for vgpu_type in conf.gpu_devices.enabled_vgpu_types:
        _register_vgpu_group(conf, vgpu_type)


def _register_vgpu_group(conf, vgpu_type):
    group = cfg.OptGroup(vgpu_group_name(vgpu_type),
                         title='vGPU type %s' % vgpu_type)
    conf.register_group(group)
    conf.register_opts(vgpu_opts, group=group)
    return group


def device_addresses(conf, vgpu_type):
    """The configured [vgpu_<type>] device_addresses of one vGPU type."""
    group = _register_vgpu_group(conf, vgpu_type)
    return list(conf[group.name].device_addresses)


def list_opts():
    return {GROUP: opts}
