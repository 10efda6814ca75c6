"""Intel QuickAssist: one device per PF, offered by what guests can get."""

# NOTE(qat): facts this driver follows. Kernel PF drivers: dh895xcc, c3xxx,
# c6xx (C62x), 4xxx (4xxx, 401xx, 402xx), 420xx, 6xxx; VF drivers of the
# older families: dh895xccvf, c3xxxvf, c6xxvf; the kernel has no VF driver
# for 4xxx and later, whose VFs go to vfio-pci or qat_vfio_pci (Intel's
# out-of-tree package binds them to its 4xxxvf). qat/state (up, down) and
# qat/cfg_services (sym, asym, dc, dcc, decomp joined by ';') exist on 4xxx
# and later since Linux 6.0 (Documentation/ABI/testing/sysfs-driver-qat).

import functools
import os

from oslo_config import cfg

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import telemetry
from cyborg.drivers import tools
from cyborg.privsep import sysfs as privsep_sysfs

CONF = cfg.CONF

INTEL = '8086'
RESOURCE_CLASS = 'CUSTOM_QAT'
EXTRA_OPTION = '[intel_qat] extra_device_ids'

#: PF device id -> (model, device id of its VFs), from the kernel's
#: qat_common/adf_accel_devices.h and pci_ids.h.
KNOWN_DEVICES = {
    '0435': ('DH895xCC', '0443'),
    '19e2': ('C3xxx', '19e3'),
    '37c8': ('C62x', '37c9'),
    '4940': ('4xxx', '4941'),
    '4942': ('401xx', '4943'),
    '4944': ('402xx', '4945'),
    '4946': ('420xx', '4947'),
    '4948': ('6xxx', '4949'),
}
#: PFs whose kernel driver shows qat/state and qat/cfg_services.
CONFIGURABLE = frozenset(('4940', '4942', '4944', '4946', '4948'))
#: Kernel drivers that hand a function to a guest: vfio-pci and its QAT
#: variant with live migration.
GUEST_DRIVERS = frozenset((pci.VFIO_PCI, 'qat_vfio_pci'))

#: What PFs without qat/ (DH895xCC, C3xxx, C62x) run: everything at once.
ALL_SERVICES = ('crypto.sym', 'crypto.asym', 'compression')
# Tokens of qat/cfg_services; 'dcc' is compression with chaining.
_CFG_SERVICES = {'sym': 'crypto.sym', 'asym': 'crypto.asym',
                 'dc': 'compression', 'dcc': 'compression',
                 'decomp': 'decompression'}
_CFG_FILE = ('qat', 'cfg_services')


def _extra_devices(values):
    extra = {}
    for pf_id, vf_id in values.items():
        pf_id = pci.hex_id(pf_id)
        extra[pf_id] = ('QAT %s' % pf_id, pci.hex_id(vf_id))
    return extra


def device_ids(conf=CONF):
    """PF id -> (model, VF id): the built-in ones and the configured ones.

    :raises exception.ConfigError: ``[intel_qat] extra_device_ids`` is bad.
    """
    devices = dict(KNOWN_DEVICES)
    devices.update(pci.checked(EXTRA_OPTION, _extra_devices,
                               conf.intel_qat.extra_device_ids))
    return devices


def is_qat(fn, devices=None):
    """Whether the ``sysfs.PciFunction`` is a PF or VF of ``devices``
    (default: the built-in ones)."""
    devices = KNOWN_DEVICES if devices is None else devices
    return fn.vendor_id == INTEL and (
        fn.device_id in devices or
        any(fn.device_id == vf_id for _model, vf_id in devices.values()))


def services(fn):
    """The services the PF ``fn`` runs, from ``qat/cfg_services``.

    The older families show no ``qat/`` and run every service. Where the
    file should be but cannot be read the services are unknown: none, and
    a defect of ``fn`` says why. Unknown tokens are defects too.
    """
    if not os.path.isdir(fn.subdir('qat')):
        if fn.device_id in CONFIGURABLE:
            fn.defect('no qat/ directory (kernel older than 6.0?): the '
                      'services are unknown', 'qat')
            return []
        return list(ALL_SERVICES)
    raw = fn.read(os.path.join(*_CFG_FILE))
    if raw is None:
        fn.defect('unreadable: the services are unknown', *_CFG_FILE)
        return []
    tokens = {token.strip() for token in raw.lower().split(';')} - {''}
    unknown = sorted(tokens - set(_CFG_SERVICES))
    if unknown:
        fn.defect('names unknown service(s) %s' % ', '.join(
            repr(token[:20]) for token in unknown[:4]), *_CFG_FILE)
    return sorted({_CFG_SERVICES[token] for token in tokens
                   if token in _CFG_SERVICES})


def holder(fn):
    """The kernel driver bound to ``fn``: its name, '' when there is none,
    None (and a defect of ``fn``) when the link cannot be read."""
    if not os.path.lexists(fn.subdir('driver')):
        return ''
    name = fn.driver
    if name is None:
        fn.defect('not a readable link: the driver is unknown', 'driver')
    return name


def _count(fn, name, driver):
    """An SR-IOV count of ``fn``; DriverError when the file is damaged."""
    value = getattr(fn, name)
    for defect in fn.defects:
        if defect.path == fn.relpath(name):
            raise exception.DriverError(driver=driver, reason=str(defect))
    return value


class IntelQatDriver(base.AcceleratorDriver):
    """Reports one device per QAT physical function.

    Its deployable ``<host>_<PF address>`` has one accelerator and one PCI
    attach handle per SR-IOV VF bound to a guest driver (vfio-pci,
    qat_vfio_pci), or the PF itself when it has no VFs and is bound to
    one. A PF offering nothing is reported without a deployable, with its
    offer reason. With
    ``[intel_qat] offer_host_bound_functions`` every VF is offered.
    """

    name = 'intel_qat'
    scrub_group = 'intel_qat'
    #: Read at discovery, and changed in place when an operator
    #: reconfigures a PF (see ``base.AcceleratorDriver.watched_files``).
    watched_files = base.AcceleratorDriver.watched_files + (
        'qat/cfg_services',)

    def __init__(self):
        self.devices = device_ids(CONF)
        self.offer_host_bound = CONF.intel_qat.offer_host_bound_functions

    def discover(self, ctx):
        pfs = [fn for fn in ctx.sysfs.pci_functions
               if fn.vendor_id == INTEL and fn.device_id in self.devices]
        return tools.build_each(self.name, pfs,
                                functools.partial(self._device, ctx))

    def _for_guests(self, fn):
        # NOTE(qat): a function on a host driver (c6xxvf, 4xxxvf, the PF
        # driver) may serve the host: its crypto API, Intel's QAT
        # software. What an operator gives guests sits on vfio-pci.
        bound = holder(fn)
        return self.offer_host_bound or bound in GUEST_DRIVERS

    def _vfs(self, pf, model, vf_id):
        """(VFs of the PF's kind, every readable VF)."""
        found = tools.virtual_functions(pf)
        vfs = []
        for vf in found:
            if vf.device_id == vf_id:
                vfs.append(vf)
            else:
                vf.defect('a VF of device id %s is not one of a %s (%s): '
                          'left out' % (vf.device_id, model, vf_id),
                          'device')
        return vfs, found

    def _device(self, ctx, pf):
        model, vf_id = self.devices[pf.device_id]
        vfs, found = self._vfs(pf, model, vf_id)
        offered = [vf for vf in vfs if self._for_guests(vf)]
        # NOTE(qat): a PF whose VFs are enabled is never handed over, even
        # when none of them reads: that would take the VFs' hardware too.
        has_vfs = bool(pf.virtfn_links) or bool(pf.sriov_numvfs)
        if not has_vfs and self._for_guests(pf):
            offered = [pf]
        offered_services = services(pf)
        deployables = []
        if offered:
            traits = {pci.OWNER_TRAIT, pci.trait('QAT'),
                      pci.trait('QAT_PRODUCT_ID', pf.device_id)}
            traits.update(pci.trait('QAT', service)
                          for service in offered_services)
            handles = [pci.pci_handle(fn) for fn in offered]
            deployables.append(report.Deployable(
                name=pci.deployable_name(ctx.host, pf),
                num_accelerators=len(handles), resource_class=RESOURCE_CLASS,
                traits=sorted(traits), attach_handles=handles,
                driver_name=self.name))
        return pci.device(
            pf, 'QAT', model, deployables, self.name,
            services=offered_services,
            vendor_info={'vfs': len(vfs), 'functions_offered': len(offered)},
            functions=found,
            offer_reason=None if offered else self._why_unoffered(
                pf, vfs, has_vfs))

    @staticmethod
    def _why_unoffered(pf, vfs, has_vfs):
        """Why a PF offers no function to guests."""
        if has_vfs and not vfs:
            return ('its SR-IOV VFs are enabled but none reads as one of '
                    'its VFs (see its warnings), and a PF with VFs is never '
                    'offered whole: check its VFs (sriov_numvfs, their '
                    'virtfn links and device ids)')
        if vfs:
            drivers = sorted({holder(vf) or 'no driver' for vf in vfs})
            return ('none of its %d VFs is bound to vfio-pci or '
                    'qat_vfio_pci (they are on %s) and [intel_qat] '
                    'offer_host_bound_functions is false: bind them to '
                    'vfio-pci (activating the device binds those on no '
                    'driver), or set that option to true'
                    % (len(vfs), ', '.join(drivers)))
        return ('it has no SR-IOV VFs and the PF is bound to %s, not to '
                'vfio-pci or qat_vfio_pci, while [intel_qat] '
                'offer_host_bound_functions is false: activate the device '
                'to create its VFs ([intel_qat] create_vfs), bind the PF to '
                'vfio-pci, or set that option to true'
                % (holder(pf) or 'no driver'))

    def install(self, device):
        """Make the PF's VFs ready for guests.

        With ``[intel_qat] create_vfs``, a PF with no VFs gets all it
        supports, with ``sriov_drivers_autoprobe`` off so that no host
        driver takes them; a non-zero count is never changed, as that would
        tear down VFs that guests may hold. Then every VF bound to no
        driver is bound to vfio-pci; VFs a host driver holds stay there.
        """
        sysfs, pf = pci.function_of(device, self.name)
        if CONF.intel_qat.create_vfs and not pf.virtfn_links:
            total = _count(pf, 'sriov_totalvfs', self.name)
            current = _count(pf, 'sriov_numvfs', self.name)
            if total and current == 0:
                autoprobe = pf.subdir('sriov_drivers_autoprobe')
                if os.path.isfile(autoprobe):
                    privsep_sysfs.write(sysfs.root, autoprobe, 0)
                privsep_sysfs.write(sysfs.root, pf.subdir('sriov_numvfs'),
                                    total)
                # NOTE(qat): the kernel adds the VFs before the write
                # returns; a fresh scan sees them.
                sysfs, pf = pci.function_of(device, self.name)
        _model, vf_id = self.devices.get(pf.device_id, (None, None))
        for vf in tools.virtual_functions(pf):
            if vf.device_id == vf_id and holder(vf) == '':
                pci.bind_function(vf, pci.VFIO_PCI)

    def scrub(self, device, deployable):
        """Reset each function the deployable lends to guests: its VFs,
        or the PF offered whole (see ``pci.reset_function``).

        NOTE(qat): a VF's reset clears its rings and their state alone;
        the PF and the other VFs keep running.
        """
        return pci.reset_handles(deployable, self.name)

    def health(self, device):
        """The PCI card checks of the PF (answers, AER, link, hwmon), and
        failed when ``qat/state`` is not 'up'; kernels without ``qat/``
        (before 6.0, or c62x and older) show no state.

        A PF with VFs on no driver degrades the card: the VFs need the
        PF's driver.
        """
        return health.check_device(
            device, needs_driver=bool(device.vendor_board_info.get('vfs')),
            extra=(health.check_qat,))

    def metrics(self, device):
        """AER counts, temperature and power from sysfs."""
        return telemetry.sample_device(device)
