"""Intel FPGA cards (PAC Arria 10 GX, D5005, N3000) on either kernel driver."""

# NOTE(fpga): a card runs on the upstream DFL driver (dfl-pci) or on
# OPAE's out-of-tree one (intel-fpga-pci); intel_fpga_sysfs knows where
# each puts the FME and ports. A card bound to neither (vfio-pci for a
# whole-card passthrough, or no driver yet) is still reported, with its
# region and function unknown and a warning saying why.

import os_resource_classes as orc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import intel_fpga_sysfs as layout
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.drivers import telemetry
from cyborg.drivers import tools

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

VENDOR_ID = '8086'
#: PF device id -> (model trait part, model name); ids as dfl-pci and
#: intel-fpga-pci bind them. Their VFs (09c5, 0b2c) are reached through
#: the PF and never reported on their own.
MODELS = {
    '09c4': ('PAC_ARRIA10', 'Intel PAC Arria 10 GX'),
    '0b2b': ('PAC_D5005', 'Intel PAC D5005'),
    '0b30': ('PAC_N3000', 'Intel PAC N3000'),
}
SERVICE_REGION = 'fpga.region:%s'
SERVICE_FUNCTION = 'fpga.function:%s'
#: vendor_board_info keys: the stack, and its container per stack.
STACK_KEY = 'fpga_stack'
_CONTAINER_KEY = {layout.DFL: 'fpga_region', layout.OPAE: 'fpga_dev'}

# NOTE(fpga): cards on no FPGA driver already noted by this process; the
# state is an operator's choice, worth one log line, not one per pass.
_NOTED = set()


class IntelFpgaDriver(base.AcceleratorDriver):
    """Reports each Intel FPGA card as one FPGA device and one deployable.

    With SR-IOV VFs enabled the deployable holds one accelerator and one
    PCI handle per VF; without, the PF itself is the one accelerator. The
    traits name the loaded region (the FME's PR interface id) and function
    (the AFU ids of the card's ports, on the PF or, with SR-IOV, on VFs
    bound to the FPGA driver), so programming a new image changes them on
    the next pass.
    """

    name = 'intel_fpga'
    scrub_group = 'fpga'
    #: The AFU and PR interface ids, which programming changes in place,
    #: in both kernel layouts (see ``intel_fpga_sysfs``), and the ports
    #: the SR-IOV driver moves to VFs.
    watched_files = base.AcceleratorDriver.watched_files + (
        'fpga/*/*/afu_id', 'fpga/*/*/pr/interface_id',
        'fpga_region/*/*/afu_id',
        'fpga_region/*/*/*/fpga_region/*/compat_id')

    def discover(self, ctx):
        pfs = [fn for fn in ctx.sysfs.pci_functions
               if fn.vendor_id == VENDOR_ID and fn.device_id in MODELS
               and not fn.is_vf]
        return tools.build_each(self.name, pfs,
                                lambda pf: self._device(ctx.host, pf))

    def health(self, device):
        """The PCI card checks of the PF (answers, AER, link, hwmon), and
        on dfl-pci the FME's error registers and temperatures."""
        return health.check_device(device, extra=(health.check_dfl,))

    def metrics(self, device):
        """AER counts, and temperature and power from the hwmon devices
        of the PF and, on dfl-pci, of its FME (dfl_fme_thermal,
        dfl_fme_power)."""
        fn_dir = health.function_dir(tools.control_address(device))
        dirs = health.hwmon_dirs(fn_dir) + [
            d for fme in health.dfl_fmes(fn_dir)
            for d in health.hwmon_dirs(fme)]
        return telemetry.sample_device(device, hwmon_dirs=dirs)

    def program(self, device, deployable, image_path):
        """Load ``image_path`` (a green bitstream) with OPAE's fpgaconf.

        The tool is the one built for the card's kernel driver: ``[fpga]
        dfl_fpgaconf_path`` on dfl-pci, ``[fpga] fpgaconf_path`` on
        intel-fpga-pci; both target the PF by its PCI address.
        """
        cpid = device.controlpath.cpid_info
        target = ['--bus', '0x' + cpid['bus'],
                  '--device', '0x' + cpid['device'],
                  '--function', '0x' + cpid['function']]
        stack = device.vendor_board_info.get(STACK_KEY)
        if stack == layout.DFL:
            # NOTE(fpga): OPAE's DFL-era fpgaconf takes the PCI segment
            # too; hosts with several domains need it to find the card.
            cmd = ([CONF.fpga.dfl_fpgaconf_path, '--segment',
                    '0x' + cpid['domain']] + target)
        elif stack == layout.OPAE:
            cmd = [CONF.fpga.fpgaconf_path] + target
        else:
            raise exception.DriverError(
                driver=self.name,
                reason='%s is bound to %s, not to dfl-pci or intel-fpga-pci:'
                       ' no tool can program it' % (
                           tools.control_address(device),
                           device.std_board_info.get('kernel_driver')
                           or 'no driver'))
        tools.run(self.name, cmd + [image_path], CONF.fpga.program_timeout,
                  inputs=[image_path])

    def scrub(self, device, deployable):
        """Load ``[fpga] default_image`` with ``program`` when it is set,
        else reset the functions guests get (the VFs, or the PF)."""
        return pci.reprogram_or_reset(self, device, deployable,
                                      CONF.fpga.default_image)

    def _device(self, host, pf):
        model_trait, model = MODELS[pf.device_id]
        vfs = tools.virtual_functions(pf)
        stack = layout.stack_of(pf)
        defects, vendor_info = [], {}
        if stack is None:
            defects.append(_off_fpga_driver(self.name, pf))
            found = layout.Layout(None)
        else:
            # NOTE(fpga): with SR-IOV on, the PF has given its ports to
            # the VFs; a VF bound to vfio-pci shows none on the host.
            found = layout.read(pf, stack, is_pf=True,
                                ports_moved=bool(pf.virtfn_links))
            for vf in vfs:
                vf_stack = layout.stack_of(vf)
                if vf_stack is not None:
                    found.afu_ids += layout.read(vf, vf_stack,
                                                 is_pf=False).afu_ids
            vendor_info[STACK_KEY] = stack
            if found.container:
                vendor_info[_CONTAINER_KEY[stack]] = found.container
        regions = list(dict.fromkeys(found.interface_ids))
        functions = list(dict.fromkeys(found.afu_ids))
        vendor = pci.vendor_name(pf.vendor_id)
        traits = [pci.OWNER_TRAIT, pci.trait('FPGA', vendor),
                  pci.trait('FPGA', vendor, model_trait)]
        traits += [pci.trait('FPGA_REGION', vendor, rid) for rid in regions]
        traits += [pci.trait('FPGA_FUNCTION_ID', vendor, fid)
                   for fid in functions]
        services = [SERVICE_REGION % rid for rid in regions]
        services += [SERVICE_FUNCTION % fid for fid in functions]
        handles = [pci.pci_handle(fn) for fn in vfs or [pf]]
        deployable = report.Deployable(
            name=pci.deployable_name(host, pf),
            num_accelerators=len(handles),
            resource_class=orc.FPGA,
            traits=traits,
            attach_handles=handles,
            driver_name=self.name)
        return pci.device(
            pf, 'FPGA', model, [deployable], self.name, services=services,
            vendor_info=vendor_info, functions=vfs, defects=defects)


def _off_fpga_driver(driver, pf):
    """The warning of a card that no FPGA kernel driver holds."""
    found = sysfs.Defect(
        pf.relpath('driver'),
        'bound to %s, not to dfl-pci or intel-fpga-pci: the region and '
        'function are unknown' % (pf.driver or 'no driver'))
    if found not in _NOTED:
        _NOTED.add(found)
        LOG.info('%s: reporting %s for passthrough only: %s', driver,
                 pf.address, found)
    return found
