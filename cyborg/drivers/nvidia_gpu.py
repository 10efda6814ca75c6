"""NVIDIA GPUs offered whole (PGPU) or as mediated vGPUs (VGPU)."""

import dataclasses
import os
import re

import os_resource_classes as orc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import mdev
from cyborg.drivers import nvidia_modes
from cyborg.drivers import nvml
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.drivers import telemetry
from cyborg.drivers import tools

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

VENDOR_ID = '10de'
#: PCI class ids of GPUs: VGA compatible controller, 3D controller. The
#: other functions of a GPU's slot (HD audio 0403, USB 0c03, USB-C UCSI
#: 0c80) are not GPUs and this driver never reports them.
DISPLAY_CLASSES = ('0300', '0302')
ATTACH_MDEV = mdev.ATTACH_MDEV
SERVICE_PGPU = 'gpu.compute'
SERVICE_VGPU = 'vgpu:%s'
_TYPES_DIR = 'mdev_supported_types'
# NOTE(vgpu): NVIDIA's vGPU manager writes a type's description as
# comma-separated key=value pairs, max_instance being the most vGPUs of the
# type that one physical GPU holds.
_MAX_INSTANCE = re.compile(r'(?:^|,)\s*max_instance\s*=\s*([^,\s]*)')


def is_gpu(fn):
    """Whether ``fn`` is an NVIDIA GPU, whatever kernel driver it has.

    A GPU bound to vfio-pci is one still: it can be passed through.
    """
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

    A GPU that offers none of ``[gpu_devices] enabled_vgpu_types`` and
    holds no vGPU is one PGPU deployable. Otherwise each enabled type it
    offers, on its PF (Turing and older) or on its SR-IOV VFs (Ampere and
    later), is one VGPU deployable ``<host>_<PF address>_<type>`` with one
    MDEV handle per vGPU the GPU can hold of the type, and the GPU is not
    offered whole. A GPU that holds vGPUs of one type no option enables
    for it offers the rest of that type, as if in that type's mode; a GPU
    that offers nothing says why (``report.Device.offer_reason``).

    NOTE(gpu): ``install`` keeps the default (nothing to prepare). Nova
    passes a PGPU through as a managed hostdev, so libvirt binds it to
    vfio-pci itself; vGPUs are mediated devices created at bind time on
    the host driver (nvidia) the GPU already uses.
    """

    name = 'nvidia_gpu'
    scrub_group = 'gpu_devices'

    def __init__(self):
        gpu_conf.register_dynamic_opts(CONF)
        # NOTE(vgpu): configuration mistakes are logged once per agent
        # process, not on every discovery pass.
        self._warned = set()

    def discover(self, ctx):
        vgpus = _VgpuPass(self._vgpu_types())
        gpus = [fn for fn in ctx.sysfs.pci_functions if is_gpu(fn)]
        pfs, lost = _physical_gpus(gpus)
        devices = tools.build_each(
            self.name, pfs, lambda fn: self._device(
                ctx, fn, vgpus, lost.get(fn.address, [])))
        self._warn_unmatched(vgpus)
        return devices

    def health(self, device):
        """The PCI card checks of the GPU (answers, AER, link width,
        hwmon), and NVML's where it loads. A GPU offering vGPUs on no
        driver is degraded: its vGPUs need the nvidia driver.

        NOTE(gpu): GPUs lower their PCIe link speed when idle to save
        power, so only the link's width is judged.
        """
        address = tools.control_address(device)
        vgpus = any(s.startswith(SERVICE_VGPU % '') for s in device.services)
        return health.check_device(
            device, needs_driver=vgpus, link_speed=False,
            extra=(lambda _fn_dir, findings: nvml.check(address, findings),))

    def metrics(self, device):
        """AER counts, temperature and power from sysfs; with NVML also
        utilisation, memory and ECC counts, and NVML's temperature and
        power over sysfs'."""
        sample = telemetry.sample_device(device)
        sample.update(nvml.sample(tools.control_address(device)))
        return telemetry.only_series(sample)

    def scrub(self, device, deployable):
        """Reset a PGPU's function; for vGPUs, each parent function that
        holds no mediated device any more.

        NOTE(vgpu): ``release_handle`` removed this deployable's vGPUs at
        unbind; others of the same GPU (another type's deployable) may
        still serve instances. A parent that still holds a vGPU is never
        reset: the reset would pull the vGPU from under its instance. Nor
        is a PF parent with SR-IOV VFs: its reset resets them too, and
        they may serve other tenants (as vGPU parents or passed through).
        """
        if not any(handle.attach_type == ATTACH_MDEV
                   for handle in deployable.attach_handles):
            return pci.reset_handles(deployable, self.name)
        fs = sysfs.Sysfs()
        parents = {}
        for handle in deployable.attach_handles:
            fn = pci.function_at(pci.handle_address(handle), self.name, fs)
            parents.setdefault(fn.address, fn)
        done = False
        for fn in parents.values():
            held = mdev.held(fn)
            if held or fn.virtfn_links:
                LOG.info('%s: not resetting %s for %s: %s', self.name,
                         fn.address, deployable.name,
                         'it still holds vGPUs %s' % ', '.join(held) if held
                         else 'its SR-IOV VFs would be reset with it')
                continue
            done = pci.reset_function(fn, self.name) or done
        return done

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

    def in_use(self, device):
        """The mediated devices (vGPUs) on the GPU and on its VFs."""
        _fs, pf = pci.function_of(device, self.name)
        found = []
        for fn in [pf] + tools.virtual_functions(pf):
            found += mdev.held(fn)
        return sorted(found)

    def _device(self, ctx, pf, vgpus, lost):
        host = ctx.host
        vfs = [vf for vf in tools.virtual_functions(pf) if is_gpu(vf)]
        offered = {fn.address: fn.mdev_types() for fn in [pf] + vfs}
        modes = nvidia_modes.offered_modes(pf, vfs, offered)
        chosen = ctx.chosen_mode(self.name, pf.address)
        if chosen is not None and chosen not in modes:
            self._warn_once(
                ('mode', pf.address, chosen),
                'GPU %s does not offer the mode %s chosen for it (it offers '
                '%s); its options arrange it', pf.address, chosen,
                ', '.join(modes))
            chosen = None
        # NOTE(gpu): a function that holds a vGPU, of an enabled type or
        # not, is busy: passing it through would pull the vGPU away.
        busy = {address for address, types in offered.items()
                if any(kind.created for kind in types.values())}
        held = nvidia_modes.held(pf, vfs, offered)
        if chosen is None:
            deployables, services, mode, reason = self._arranged(
                host, pf, vfs, vgpus, offered, busy, held)
        else:
            deployables, services = self._chosen(host, pf, vfs, vgpus,
                                                 offered, chosen, busy)
            mode = chosen
            reason = None if deployables else (
                nvidia_modes.why_mode_unoffered(chosen, held))
        # NOTE(gpu): every VF's defects (and those of VFs the PF lost)
        # are warnings of the GPU, whether or not a handle uses the VF.
        device = pci.device(pf, pci.device_type(pf.class_code),
                            'NVIDIA GPU 0x%s' % pf.device_id, deployables,
                            self.name, services=services,
                            functions=vfs + lost, offer_reason=reason)
        device.modes = modes
        device.mode = mode
        return device

    def _arranged(self, host, pf, vfs, vgpus, offered, busy, held):
        """(deployables, services, mode, offer reason) of a GPU that its
        options arrange, no mode being chosen for it.

        NOTE(vgpu): a GPU holding vGPUs of one type that no option enables
        for it (created by hand, or under options since changed) is in
        that type's mode: the kernel offers no other type beside them and
        the GPU cannot be passed through, so the rest of that type is what
        it offers. An enabled type whose device_addresses leave the GPU
        out is the operator's word against it: no adoption.
        """
        deployables, services, used, applied = self._vgpu_deployables(
            host, pf, vfs, vgpus, offered)
        used.update(busy)
        for parent in self._pgpu_functions(pf, vfs, used):
            deployables.append(self._pgpu(host, pf, parent))
            services.append(SERVICE_PGPU)
        enabled = [type_id for type_id, _addresses in vgpus.types]
        if (not deployables and not applied and len(held) == 1
                and not set(held) & set(enabled)):
            deployables, services = self._one_type(host, pf, vfs, offered,
                                                   next(iter(held)))
        mode = nvidia_modes.derived(pf, vfs, offered, deployables)
        reason = None if deployables else nvidia_modes.why_unoffered(
            pf, held, enabled, applied)
        return deployables, services, mode, reason

    def _one_type(self, host, pf, vfs, offered, type_id):
        """The deployables and services of a GPU offering ``type_id``
        alone, whatever ``[gpu_devices]`` enables."""
        deployables, services, _used, _applied = self._vgpu_deployables(
            host, pf, vfs, _VgpuPass([(type_id, None)]), offered)
        return deployables, services

    def _chosen(self, host, pf, vfs, vgpus, offered, mode, busy):
        """The deployables and services of a GPU in the chosen ``mode``,
        whatever ``[gpu_devices]`` enables for it."""
        # NOTE(gpu): the GPU's types count as offered and its addresses as
        # matched: the configuration does not apply to it, which is no
        # mistake of the configuration.
        for fn in [pf] + vfs:
            for type_id in offered[fn.address]:
                vgpus.offered.add(type_id)
                vgpus.matched_addresses.update(
                    {(type_id, fn.address), (type_id, pf.address)})
        if mode == base.MODE_PASSTHROUGH:
            if busy:
                # NOTE(gpu): vGPUs made outside this mode (by hand) still
                # exist; the GPU waits until they are gone.
                self._warn_once(('busy', pf.address), 'GPU %s is in mode %s '
                                'but holds vGPUs; it is not offered',
                                pf.address, mode)
                return [], []
            return [self._pgpu(host, pf, pf)], [SERVICE_PGPU]
        return self._one_type(host, pf, vfs, offered, mode.split(':', 1)[1])

    def _pgpu_functions(self, pf, vfs, used):
        """The functions of one GPU offered whole."""
        if CONF.gpu_devices.filter_sriov_vfs or not vfs:
            # NOTE(gpu): once a GPU holds vGPUs, on itself or on its VFs,
            # all of it serves them.
            return [] if used else [pf]
        # NOTE(gpu): with VFs offered, the PF is not: passing it through
        # would hand over the hardware behind the VFs as well.
        return [vf for vf in vfs if vf.address not in used]

    def _vgpu_deployables(self, host, pf, vfs, vgpus, offered):
        """(deployables, services, the functions the types use, the types
        that apply to this GPU, offered or without room)."""
        deployables, services, used, applied = [], [], set(), []
        for vgpu_type, addresses in vgpus.types:
            # NOTE(vgpu): an SR-IOV GPU shows its types on its VFs (the PF
            # shows none); an older GPU on the PF itself.
            parents = [(vf, offered[vf.address][vgpu_type]) for vf in vfs
                       if vgpu_type in offered[vf.address]]
            on_vfs = bool(parents)
            if not on_vfs and vgpu_type in offered[pf.address]:
                parents = [(pf, offered[pf.address][vgpu_type])]
            chosen = [(fn, kind) for fn, kind in parents
                      if _selected(fn, pf, addresses)]
            if not chosen:
                continue
            applied.append(vgpu_type)
            vgpus.offered.add(vgpu_type)
            for fn, _kind in chosen:
                where = {fn.address, pf.address}
                vgpus.matched_addresses.update(
                    (vgpu_type, address)
                    for address in (where if addresses is None
                                    else where & addresses))
                used.add(fn.address)
            if on_vfs:
                handles = _vf_handles(pf, parents, chosen, offered)
            else:
                handles = _pf_handles(pf, chosen[0][1])
            if not handles:
                # NOTE(vgpu): Placement refuses an empty inventory; the
                # type comes back once the GPU can hold one again (when
                # the vGPUs of another type on it are gone).
                continue
            deployables.append(self._vgpu(host, pf, chosen[0][1], handles))
            services.append(SERVICE_VGPU % vgpu_type)
        return deployables, services, used, applied

    def _pgpu(self, host, pf, fn):
        return report.Deployable(
            name=pci.deployable_name(host, fn),
            num_accelerators=1,
            resource_class=orc.PGPU,
            traits=[pci.OWNER_TRAIT,
                    pci.trait(pci.vendor_name(pf.vendor_id), pf.device_id)],
            attach_handles=[pci.pci_handle(fn)],
            driver_name=self.name)

    def _vgpu(self, host, pf, kind, handles):
        return report.Deployable(
            name=pci.deployable_name(host, pf, kind.type_id),
            num_accelerators=len(handles),
            resource_class=orc.VGPU,
            traits=[pci.OWNER_TRAIT,
                    pci.trait(pci.vendor_name(pf.vendor_id), pf.device_id,
                              kind.name)],
            attach_handles=handles,
            driver_name=self.name)


def _physical_gpus(gpus):
    """The GPUs that are no SR-IOV VF, and {PF address: [VFs it lost]}.

    A function is a VF when its ``physfn`` link says so or when a GPU's
    ``virtfn`` link names it. A VF whose PF has no ``virtfn`` link to it
    is lost to that PF (a defect of the VF, a warning of the PF's device).
    """
    named = {address for fn in gpus for address in fn.virtfns}
    pfs, lost = [], {}
    for fn in gpus:
        if fn.address in named:
            # NOTE(gpu): reported through its PF; tools.virtual_functions
            # records it there when its own physfn link disagrees.
            continue
        if not fn.is_vf:
            pfs.append(fn)
            continue
        pf = tools.physical_function(fn)
        if pf is not None and fn.address not in pf.virtfns:
            fn.defect('%s has no virtfn link to this VF: it is left out'
                      % pf.address, 'physfn')
            lost.setdefault(pf.address, []).append(fn)
    return pfs, lost


def _selected(fn, pf, addresses):
    """Whether ``[vgpu_<type>] device_addresses`` selects the parent ``fn``
    of GPU ``pf``: it names either, or it is empty."""
    return addresses is None or bool({fn.address, pf.address} & addresses)


def _mdev_handle(fn, type_id, index):
    return dataclasses.replace(
        pci.pci_handle(fn, asked_type=type_id,
                       vgpu_mark='%s_%d' % (type_id, index)),
        attach_type=ATTACH_MDEV)


def _pf_handles(pf, kind):
    """The MDEV handles of a type the PF itself offers (Turing and older).

    NOTE(vgpu): available_instances counts the vGPUs that can still be
    created and devices/ those that exist, so their sum is the type's size
    on this GPU and does not change as instances come and go. Once a vGPU
    of another (time-sliced) type exists on the GPU, the kernel reads 0
    for this one and nothing exists of it: the type is left out. The
    driver takes the kernel's word for that rather than forbidding mixed
    types itself, since NVIDIA's mixed-size mode and MIG-backed types do
    allow them. The sum never exceeds the type's max_instance.
    """
    total = max(kind.available_instances, 0) + kind.created
    cap = _max_instance(pf, kind, required=False)
    if cap is not None:
        total = min(total, cap)
    return [_mdev_handle(pf, kind.type_id, index) for index in range(total)]


def _vf_handles(pf, parents, chosen, offered):
    """The MDEV handles of a type the GPU offers on its VFs (Ampere on).

    NOTE(vgpu): each VF holds one vGPU, so a VF counts once when it holds
    a vGPU of the type, or reads available_instances of at least 1 and
    holds no vGPU of any type. The GPU as a whole holds at most the type's
    max_instance, less those on VFs that ``device_addresses`` leaves out:
    summing available_instances over the VFs would offer one per VF (16
    on an A100 whose A100-4C stops at 10). VFs holding a vGPU come first,
    so handles in use stay; then free VFs in virtfn order. Each handle is
    the only one on its VF, so its mark is ``<type>_0``.
    """
    type_id = chosen[0][1].type_id
    caps = [cap for cap in (_max_instance(vf, kind, required=True)
                            for vf, kind in chosen) if cap is not None]
    picked = {vf.address for vf, _kind in chosen}
    elsewhere = sum(1 for vf, kind in parents
                    if kind.created and vf.address not in picked)
    holders = [vf for vf, kind in chosen if kind.created]
    free = [vf for vf, kind in chosen
            if not kind.created and kind.available_instances > 0
            and not any(other.created
                        for other in offered[vf.address].values())]
    room = len(holders) + len(free)
    if caps:
        room = min(room, max(min(caps) - elsewhere, 0))
    order = {address: n for n, address in enumerate(pf.virtfns)}
    return [_mdev_handle(vf, type_id, 0)
            for vf in sorted((holders + free)[:room],
                             key=lambda vf: order[vf.address])]


def _max_instance(fn, kind, required):
    """The max_instance of ``kind`` on ``fn`` from its description, or None.

    The description is optional in the kernel's ABI but NVIDIA's driver
    always writes one. One that cannot be read, or whose max_instance does
    not parse, is a defect; one without max_instance is a defect only when
    the cap is ``required`` (types on VFs, whose count would otherwise be
    one per VF). Without a cap the kernel's counts decide.
    """
    parts = (_TYPES_DIR, kind.type_id, 'description')
    fallback = ('each VF offering it counts' if required else
                'available_instances and created vGPUs count')
    text = fn.read(os.path.join(*parts))
    if text is None:
        if os.path.lexists(fn.subdir(*parts)):
            fn.defect('unreadable description: %s' % fallback, *parts)
        elif required:
            fn.defect('no description, so no max_instance: %s' % fallback,
                      *parts)
        return None
    match = _MAX_INSTANCE.search(text)
    if match is None:
        if required:
            fn.defect('description names no max_instance: %s' % fallback,
                      *parts)
        return None
    try:
        cap = int(match.group(1))
    except ValueError:
        cap = -1
    if cap < 0:
        fn.defect('max_instance %r does not parse: %s'
                  % (match.group(1)[:20], fallback), *parts)
        return None
    return cap
