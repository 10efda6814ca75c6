"""Intel QuickAssist driver: crypto and compression PFs, offered by VF."""

import functools
import os

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs as sysfs_mod
from cyborg.drivers import tools
from cyborg.privsep import sysfs as privsep_sysfs

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

INTEL = '8086'
RESOURCE_CLASS = 'CUSTOM_QAT'
EXTRA_OPTION = '[intel_qat] extra_device_ids'

#: PF device id -> (model, device id of its VFs).
KNOWN_DEVICES = {
    '0435': ('DH895xCC', '0443'),
    '19e2': ('C3xxx', '19e3'),
    '37c8': ('C62x', '37c9'),
    '4940': ('4xxx', '4941'),
    '4942': ('401xx', '4943'),
    '4944': ('402xx', '4945'),
}

ALL_SERVICES = ('crypto.sym', 'crypto.asym', 'compression')
# Tokens of qat/cfg_services; 'dcc' is compression chaining.
_CFG_SERVICES = {'sym': 'crypto.sym', 'asym': 'crypto.asym',
                 'dc': 'compression', 'dcc': 'compression'}


def _extra_devices(values):
    extra = {}
    for pf_id, vf_id in values.items():
        pf_id = pci.hex_id(pf_id)
        extra[pf_id] = ('QAT %s' % pf_id, pci.hex_id(vf_id))
    return extra


def services(fn):
    """The services a PF is configured for, from ``qat/cfg_services``.

    Kernels without the ``qat/`` directory run every service.

    :raises sysfs.MalformedEntry: the file is unreadable or names no
        service this driver knows.
    """
    if not os.path.isdir(fn.subdir('qat')):
        return list(ALL_SERVICES)
    raw = fn.read(os.path.join('qat', 'cfg_services'))
    if raw is None:
        raise sysfs_mod.MalformedEntry('qat/cfg_services is unreadable')
    tokens = {token.strip() for token in raw.lower().split(';')} - {''}
    unknown = tokens - set(_CFG_SERVICES)
    if unknown:
        LOG.warning('QAT %s: ignoring unknown service(s) %s in '
                    'qat/cfg_services', fn.address, ', '.join(sorted(unknown)))
    found = sorted({_CFG_SERVICES[token] for token in tokens - unknown})
    if not found:
        raise sysfs_mod.MalformedEntry(
            'qat/cfg_services %r names no known service' % raw)
    return found


class IntelQatDriver(base.AcceleratorDriver):
    """Reports one device and one deployable per QAT physical function.

    The deployable ``<host>_<PF address>`` has one accelerator and one PCI
    attach handle per SR-IOV VF, or the PF itself when it has no VFs, so a
    card is one Placement provider whatever its VF count (upstream made one
    provider per VF).
    """

    name = 'intel_qat'

    def __init__(self):
        self.devices = dict(KNOWN_DEVICES)
        self.devices.update(pci.checked(
            EXTRA_OPTION, _extra_devices, CONF.intel_qat.extra_device_ids))

    def discover(self, ctx):
        return tools.build_each(self.name, ctx.sysfs.pci_functions,
                                functools.partial(self._device, ctx))

    def _device(self, ctx, fn):
        if fn.vendor_id != INTEL or fn.device_id not in self.devices:
            return None
        model, vf_id = self.devices[fn.device_id]
        vfs = tools.virtual_functions(fn)
        for vf in vfs:
            if vf.device_id != vf_id:
                raise sysfs_mod.MalformedEntry(
                    'VF %s has device id %s, not %s'
                    % (vf.address, vf.device_id, vf_id))
        offered = services(fn)
        traits = {pci.OWNER_TRAIT, pci.trait('QAT'),
                  pci.trait('QAT_PRODUCT_ID', fn.device_id)}
        traits.update(pci.trait('QAT', service) for service in offered)
        handles = [pci.pci_handle(vf) for vf in vfs] or [pci.pci_handle(fn)]
        deployable = report.Deployable(
            name=pci.deployable_name(ctx.host, fn),
            num_accelerators=len(handles), resource_class=RESOURCE_CLASS,
            traits=sorted(traits), attach_handles=handles,
            driver_name=self.name)
        return pci.device(fn, 'QAT', model, [deployable], self.name,
                          services=offered)

    def install(self, device):
        """Create the PF's VFs when ``[intel_qat] create_vfs`` asks for it.

        Only a PF with no VFs gets them: changing a non-zero count would
        tear down VFs that guests may hold.
        """
        if not CONF.intel_qat.create_vfs:
            return
        sysfs, fn = pci.function_of(device, self.name)
        try:
            total, current = fn.sriov_totalvfs, fn.sriov_numvfs
        except sysfs_mod.MalformedEntry as exc:
            raise exception.DriverError(driver=self.name,
                                        reason=str(exc)) from None
        if total and current == 0:
            privsep_sysfs.write(sysfs.root,
                                os.path.join(fn.path, 'sriov_numvfs'), total)

    def health(self, device):
        """Unhealthy when unreachable or when ``qat/state`` is not 'up'.

        The reason is the state the kernel shows, e.g. 'down'. Kernels
        without the ``qat/`` directory report no state: healthy.
        """
        reachable = tools.pci_health(device)
        if not reachable.ok:
            return reachable
        sysfs = sysfs_mod.Sysfs()
        parts = ('bus', 'pci', 'devices', tools.control_address(device))
        if not os.path.isdir(sysfs.path(*parts, 'qat')):
            return base.HEALTHY
        state = sysfs.read(*parts, 'qat', 'state')
        if state == 'up':
            return base.HEALTHY
        return base.Health(False, state or 'qat/state is unreadable')
