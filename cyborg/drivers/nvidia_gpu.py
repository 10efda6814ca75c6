"""NVIDIA GPUs offered whole (PGPU) or as mediated vGPUs (VGPU)."""

import dataclasses

import os_resource_classes as orc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import base
from cyborg.drivers import mdev
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.drivers import tools

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

VENDOR_ID = '10de'
#: PCI class ids of GPUs: VGA compatible controller, 3D controller.
DISPLAY_CLASSES = ('0300', '0302')
ATTACH_MDEV = mdev.ATTACH_MDEV
SERVICE_PGPU = 'gpu.compute'
SERVICE_VGPU = 'vgpu:%s'


def is_gpu(fn):
    return fn.vendor_id == VENDOR_ID and fn.class_id in DISPLAY_CLASSES


@dataclasses.dataclass
class _VgpuPass:
    """The vGPU configuration of one discovery pass and what matched it."""

    #: (type id, set of PciAddress or None for every GPU), in config order.
    types: list
    offered: set = dataclasses.field(default_factory=set)
    matched_addresses: set = dataclasses.field(default_factory=set)


class NvidiaGpuDriver(base.AcceleratorDriver):
    """Reports each physical NVIDIA GPU as one device of type GPU.

    A GPU that offers none of ``[gpu_devices] enabled_vgpu_types`` is one
    PGPU deployable. Otherwise each enabled type it (or, from Ampere on,
    each of its SR-IOV VFs) offers is one VGPU deployable with one MDEV
    handle per vGPU it can hold, and the GPU is not offered whole.

    NOTE(gpu): ``install`` keeps the default (nothing to prepare). Nova
    passes a PGPU through as a managed hostdev, so libvirt binds it to
    vfio-pci itself; vGPUs are mediated devices created at bind time on
    the host driver (nvidia) the GPU already uses.
    """

    name = 'nvidia_gpu'

    def __init__(self):
        gpu_conf.register_dynamic_opts(CONF)
        # NOTE(vgpu): configuration mistakes are logged once per agent
        # process, not on every discovery pass.
        self._warned = set()

    def discover(self, ctx):
        vgpus = _VgpuPass(self._vgpu_types())
        gpus = [fn for fn in ctx.sysfs.pci_functions if is_gpu(fn)]
        devices = tools.build_each(
            self.name, gpus, lambda fn: self._device(ctx.host, fn, vgpus))
        self._warn_unmatched(vgpus)
        return devices

    def health(self, device):
        return tools.pci_health(device)

    def _warn_once(self, key, msg, *args):
        if key not in self._warned:
            self._warned.add(key)
            LOG.warning(msg, *args)

    def _vgpu_types(self):
        types = []
        for vgpu_type in dict.fromkeys(CONF.gpu_devices.enabled_vgpu_types):
            configured = gpu_conf.device_addresses(CONF, vgpu_type)
            addresses = set()
            for text in configured:
                try:
                    addresses.add(sysfs.PciAddress.parse(text))
                except sysfs.MalformedEntry:
                    self._warn_once(
                        ('address', vgpu_type, text),
                        '[%s] device_addresses: %r is not a PCI address; '
                        'ignored', gpu_conf.vgpu_group_name(vgpu_type), text)
            # NOTE(vgpu): a list of only bad addresses selects no GPU; it
            # must not fall back to "every GPU".
            types.append((vgpu_type, addresses if configured else None))
        return types

    def _warn_unmatched(self, vgpus):
        for vgpu_type, addresses in vgpus.types:
            if vgpu_type not in vgpus.offered:
                self._warn_once(
                    ('type', vgpu_type),
                    'vGPU type %s is enabled but no GPU%s offers it',
                    vgpu_type,
                    ' at its [%s] device_addresses'
                    % gpu_conf.vgpu_group_name(vgpu_type)
                    if addresses is not None else '')
                continue
            for address in sorted(addresses or ()):
                if (vgpu_type, address) not in vgpus.matched_addresses:
                    self._warn_once(
                        ('unmatched', vgpu_type, address),
                        '[%s] device_addresses names %s, but no GPU or VF '
                        'there offers %s', gpu_conf.vgpu_group_name(
                            vgpu_type), address, vgpu_type)

    def _device(self, host, fn, vgpus):
        if fn.is_vf:
            # NOTE(gpu): VFs are reported through their PF; one whose PF
            # is gone is left out with a log line.
            tools.physical_function(fn)
            return None
        vfs = [vf for vf in tools.virtual_functions(fn) if is_gpu(vf)]
        deployables, services, used = self._vgpu_deployables(
            host, fn, vfs, vgpus)
        for parent in self._pgpu_functions(fn, vfs, used):
            deployables.append(self._pgpu(host, fn, parent))
            services.append(SERVICE_PGPU)
        return pci.device(fn, pci.device_type(fn.class_code),
                          'NVIDIA GPU 0x%s' % fn.device_id, deployables,
                          self.name, services=services)

    def _pgpu_functions(self, pf, vfs, used):
        """The functions of one GPU offered whole."""
        if CONF.gpu_devices.filter_sriov_vfs or not vfs:
            # NOTE(gpu): once a GPU holds vGPUs, on itself or on its VFs,
            # all of it serves them.
            return [] if used else [pf]
        # NOTE(gpu): with VFs offered, the PF is not: passing it through
        # would hand over the hardware behind the VFs as well.
        return [vf for vf in vfs if vf.address not in used]

    def _vgpu_deployables(self, host, pf, vfs, vgpus):
        deployables, services, used = [], [], set()
        if not vgpus.types:
            return deployables, services, used
        parents = [(fn, fn.mdev_types()) for fn in [pf] + vfs]
        for vgpu_type, addresses in vgpus.types:
            for parent, mdev_types in parents:
                mdev = mdev_types.get(vgpu_type)
                if mdev is None:
                    continue
                chosen = {parent.address, pf.address}
                if addresses is not None:
                    chosen &= addresses
                    if not chosen:
                        continue
                vgpus.offered.add(vgpu_type)
                vgpus.matched_addresses.update(
                    (vgpu_type, address) for address in chosen)
                used.add(parent.address)
                total = mdev.available_instances + mdev.created
                if total < 1:
                    # NOTE(vgpu): Placement refuses an empty inventory; the
                    # type comes back once the GPU can hold one again.
                    continue
                deployables.append(self._vgpu(host, pf, parent, mdev, total))
                services.append(SERVICE_VGPU % vgpu_type)
        return deployables, services, used

    def _pgpu(self, host, pf, fn):
        return report.Deployable(
            name=pci.deployable_name(host, fn),
            num_accelerators=1,
            resource_class=orc.PGPU,
            traits=[pci.OWNER_TRAIT,
                    pci.trait(pci.vendor_name(pf.vendor_id), pf.device_id)],
            attach_handles=[pci.pci_handle(fn)],
            driver_name=self.name)

    def _vgpu(self, host, pf, parent, mdev, total):
        handles = [
            dataclasses.replace(
                pci.pci_handle(parent, asked_type=mdev.type_id,
                               vgpu_mark='%s_%d' % (mdev.type_id, index)),
                attach_type=ATTACH_MDEV)
            for index in range(total)]
        return report.Deployable(
            name=pci.deployable_name(host, parent, mdev.type_id),
            num_accelerators=total,
            resource_class=orc.VGPU,
            traits=[pci.OWNER_TRAIT,
                    pci.trait(pci.vendor_name(pf.vendor_id), pf.device_id,
                              mdev.name)],
            attach_handles=handles,
            driver_name=self.name)
