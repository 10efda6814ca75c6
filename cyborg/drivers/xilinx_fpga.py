"""Xilinx Alveo FPGA cards: management and user PFs paired into one device."""

import itertools

import os_resource_classes as orc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import tools

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

VENDOR_ID = '10ee'
#: PCI class id of processing accelerators.
ACCELERATOR_CLASS = '1200'
#: On Alveo cards function 0 is the management PF (xclmgmt) and function 1
#: the user PF (xocl) of the same slot.
MGMT_FUNCTION = '0'
SERVICE_SHELL = 'fpga.shell'


def _slot(fn):
    return (fn.address.domain, fn.address.bus, fn.address.slot)


class XilinxFpgaDriver(base.AcceleratorDriver):
    """Reports each Alveo card as one FPGA device with one deployable.

    The deployable is one accelerator with a PCI handle for each function
    of the card (management and user PF), as both go to the same guest.
    """

    # NOTE(fpga): the one spelling of the name, recorded as driver_name and
    # matched when a deployable is programmed.
    name = 'xilinx_fpga'

    def discover(self, ctx):
        functions = [fn for fn in ctx.sysfs.pci_functions
                     if fn.vendor_id == VENDOR_ID
                     and fn.class_id == ACCELERATOR_CLASS]
        # NOTE(fpga): pci_functions is sorted by address, so a slot's
        # functions are adjacent and the management PF comes first.
        cards = [tuple(group)
                 for _slot_id, group in itertools.groupby(functions, _slot)]
        return tools.build_each(
            self.name, cards, lambda card: self._device(ctx.host, card))

    def health(self, device):
        return tools.pci_health(device)

    def program(self, device, deployable, image_path):
        """Flash the base (shell) image with XRT's xbmgmt."""
        address = tools.control_address(device)
        if device.controlpath.cpid_info['function'] != MGMT_FUNCTION:
            raise exception.DriverError(
                driver=self.name,
                reason='%s is not a management function; xbmgmt cannot '
                       'program the card through it' % address)
        cmd = [CONF.fpga.xbmgmt_path, 'program', '--device', address,
               '--base', '--image', image_path]
        tools.run(self.name, cmd, CONF.fpga.program_timeout,
                  inputs=[image_path])

    def _device(self, host, card):
        control = card[0]
        if len(card) == 1:
            LOG.info('%s: %s has no paired management/user function; '
                     'reporting it alone', self.name, control.address)
        deployable = report.Deployable(
            name=pci.deployable_name(host, control),
            num_accelerators=1,
            resource_class=orc.FPGA,
            traits=[pci.OWNER_TRAIT,
                    pci.trait('FPGA', pci.vendor_name(control.vendor_id)),
                    pci.trait('FPGA_PRODUCT_ID', control.device_id)],
            attach_handles=[pci.pci_handle(fn) for fn in card],
            driver_name=self.name)
        return pci.device(
            control, 'FPGA', 'Xilinx 0x%s' % control.device_id, [deployable],
            self.name, services=[SERVICE_SHELL])
