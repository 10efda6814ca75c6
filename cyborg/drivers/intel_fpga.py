"""Intel FPGA PAC cards (Arria 10 GX, D5005) driven by the intel-fpga stack."""

import os
import re

import os_resource_classes as orc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg.drivers import base
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.drivers import tools

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

VENDOR_ID = '8086'
#: PF device id -> (model trait part, model name). Their VFs (09c5, 0b31)
#: are reached through the PF and never reported on their own.
MODELS = {
    '09c4': ('PAC_ARRIA10', 'Intel PAC Arria 10 GX'),
    '0b30': ('PAC_D5005', 'Intel PAC D5005'),
}
FPGA_CLASS = 'fpga'
DEV_PREFIX = 'intel-fpga-dev.'
FME_PREFIX = 'intel-fpga-fme.'
PORT_PREFIX = 'intel-fpga-port.'
SERVICE_REGION = 'fpga.region:%s'
SERVICE_FUNCTION = 'fpga.function:%s'

# An interface or AFU id: hex digits, possibly split by dashes (a GUID).
_ID = re.compile(r'^[0-9a-fA-F][0-9a-fA-F-]*$')


class IntelFpgaDriver(base.AcceleratorDriver):
    """Reports each Intel PAC card as one FPGA device and one deployable.

    With SR-IOV VFs enabled the deployable holds one accelerator and one
    PCI handle per VF; without, the PF itself is the one accelerator. The
    traits name the loaded region (FME interface id) and function (AFU
    id), so programming a new image changes them on the next pass.
    """

    name = 'intel_fpga'

    def discover(self, ctx):
        # NOTE(fpga): the intel-fpga-dev class entry appears once the
        # kernel driver has set the card up; its real path lies below the
        # PF's device directory.
        fpga_devs = {}
        for dev_name, path in ctx.sysfs.class_devices(FPGA_CLASS).items():
            if dev_name.startswith(DEV_PREFIX):
                fpga_devs[os.path.dirname(os.path.dirname(path))] = dev_name
        pfs = [fn for fn in ctx.sysfs.pci_functions
               if fn.vendor_id == VENDOR_ID and fn.device_id in MODELS]
        return tools.build_each(
            self.name, pfs,
            lambda pf: self._device(ctx.host, pf, fpga_devs))

    def health(self, device):
        return tools.pci_health(device)

    def program(self, device, deployable, image_path):
        """Load ``image_path`` (a green bitstream) with OPAE's fpgaconf."""
        cpid = device.controlpath.cpid_info
        cmd = [CONF.fpga.fpgaconf_path,
               '--bus', '0x' + cpid['bus'],
               '--device', '0x' + cpid['device'],
               '--function', '0x' + cpid['function'],
               image_path]
        tools.run(self.name, cmd, CONF.fpga.program_timeout,
                  inputs=[image_path])

    def _device(self, host, pf, fpga_devs):
        dev_name = fpga_devs.get(os.path.realpath(pf.path))
        if dev_name is None:
            LOG.info('%s: skipping %s: no %s* entry in class/%s yet, the '
                     'card is not ready', self.name, pf.address, DEV_PREFIX,
                     FPGA_CLASS)
            return None
        regions = _ids(pf, dev_name, FME_PREFIX, 'pr', 'interface_id')
        functions = _ids(pf, dev_name, PORT_PREFIX, 'afu_id')
        vfs = tools.virtual_functions(pf)
        handles = [pci.pci_handle(fn) for fn in vfs or [pf]]
        model_trait, model = MODELS[pf.device_id]
        vendor = pci.vendor_name(pf.vendor_id)
        traits = [pci.OWNER_TRAIT, pci.trait('FPGA', vendor),
                  pci.trait('FPGA', vendor, model_trait)]
        traits += [pci.trait('FPGA_REGION', vendor, rid) for rid in regions]
        traits += [pci.trait('FPGA_FUNCTION_ID', vendor, fid)
                   for fid in functions]
        services = [SERVICE_REGION % rid for rid in regions]
        services += [SERVICE_FUNCTION % fid for fid in functions]
        deployable = report.Deployable(
            name=pci.deployable_name(host, pf),
            num_accelerators=len(handles),
            resource_class=orc.FPGA,
            traits=traits,
            attach_handles=handles,
            driver_name=self.name)
        return pci.device(
            pf, 'FPGA', model, [deployable], self.name, services=services,
            vendor_info={'fpga_dev': dev_name})


def _ids(pf, dev_name, prefix, *path):
    """The ids read from each ``<prefix>N/<path>`` of the FPGA device."""
    dev_dir = os.path.join('fpga', dev_name)
    try:
        entries = sorted(os.listdir(pf.subdir(dev_dir)))
    except OSError:
        entries = []
    found = []
    for entry in entries:
        if entry.startswith(prefix):
            rel = os.path.join(dev_dir, entry, *path)
            value = pf.read(rel)
            if value is None or not _ID.match(value):
                raise sysfs.MalformedEntry('%s: %r' % (rel, value))
            found.append(value.lower())
    if not found:
        raise sysfs.MalformedEntry('no %s in %s' % (
            os.path.join(prefix + 'N', *path), dev_dir))
    return found
