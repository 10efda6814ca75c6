"""Xilinx Alveo cards: managed through one PF, lent to guests by the other."""

# NOTE(xilinx): an Alveo shell shows two functions on one slot (XRT,
# "Platform Overview" and "Security of Alveo Platform"): PF0, the
# management function (xclmgmt), flashes the shell, reads the sensors and
# owns the card, and stays with the host; PF1, the user function (xocl, or
# vfio-pci while a guest holds it), runs the user's kernels and is the one
# pass-through gives a guest. So the device is controlled through the
# management function (programming, health) and its one deployable passes
# the user function through.

import itertools
import os

import os_resource_classes as orc
from oslo_config import cfg

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.drivers import telemetry
from cyborg.drivers import tools

CONF = cfg.CONF

VENDOR_ID = '10ee'
#: PCI class id of processing accelerators, which Alveo functions are.
ACCELERATOR_CLASS = '1200'
MGMT, USER = 'management', 'user'
#: Function numbers of the two PFs on an Alveo slot.
MGMT_FUNCTION, USER_FUNCTION = '0', '1'
SERVICE_SHELL = 'fpga.shell'
GOLDEN = 'golden'

#: Management function device id -> (model, user function device id). A
#: card running its golden (factory) image shows its management function
#: alone, under an id of its own: its user id is None. From XRT's
#: xocl/devices.h and pci.ids.
CARDS = {
    '5000': ('Alveo U200', '5001'),
    '5004': ('Alveo U250', '5005'),
    '5008': ('Alveo U280-ES1', '5009'),
    '500c': ('Alveo U280', '500d'),
    '5020': ('Alveo U50', '5021'),
    '5058': ('Alveo U55N', '5059'),
    '505c': ('Alveo U55C', '505d'),
    'd000': ('Alveo U200 (golden image)', None),
    'd004': ('Alveo U250 (golden image)', None),
    'd008': ('Alveo U280-ES1 (golden image)', None),
    'd00c': ('Alveo U280 (golden image)', None),
    'd020': ('Alveo U50 (golden image)', None),
}
_MGMT_OF_USER = {user: mgmt for mgmt, (_model, user) in CARDS.items()
                 if user}


def is_alveo(fn):
    """Whether this driver owns the ``sysfs.PciFunction`` (either PF)."""
    return fn.vendor_id == VENDOR_ID and fn.class_id == ACCELERATOR_CLASS


def role(fn):
    """MGMT, USER or None for an Alveo function.

    A known device id decides; an id this release does not know goes by
    the function number, PF0 managing and PF1 serving the user.
    """
    if fn.device_id in CARDS:
        return MGMT
    if fn.device_id in _MGMT_OF_USER:
        return USER
    return {MGMT_FUNCTION: MGMT, USER_FUNCTION: USER}.get(
        fn.address.function)


def _slot(fn):
    return (fn.address.domain, fn.address.bus, fn.address.slot)


def _why_unoffered(golden):
    """Why a card without a user function offers nothing."""
    if golden:
        return ('it runs its golden (factory) image, which has no user '
                'function: flash a shell onto it (xbmgmt program --base) '
                'and cold-reboot the host')
    return ('its user function (PF1) does not read (see its warnings): '
            'check that a shell is flashed and that xocl or vfio-pci holds '
            'the function, or rescan the PCI bus')


def _missing(present, function, reason):
    """The Defect of the function ``function`` of ``present``'s slot."""
    address = sysfs.PciAddress(present.address.domain, present.address.bus,
                               present.address.slot, function)
    defect = sysfs.Defect(
        os.path.join('bus', 'pci', 'devices', str(address)), reason)
    sysfs.log_once(defect, 'Xilinx Alveo card')
    return defect


class XilinxFpgaDriver(base.AcceleratorDriver):
    """Reports each Alveo card as one FPGA device.

    The device's control path is the management function; its deployable
    ``<host>_<user function address>`` is one accelerator with one PCI
    handle, the user function. A card showing only one of its functions
    is reported with a warning: without its user function it offers
    nothing, without its management function it cannot be programmed. A
    card running its golden image is reported with no deployable, with its
    offer reason.
    """

    # NOTE(fpga): the one spelling of the name, recorded as driver_name and
    # matched when a deployable is programmed.
    name = 'xilinx_fpga'
    scrub_group = 'fpga'

    def discover(self, ctx):
        functions = [fn for fn in ctx.sysfs.pci_functions if is_alveo(fn)]
        # NOTE(fpga): pci_functions is sorted by address, so a slot's
        # functions are adjacent.
        cards = [tuple(group)
                 for _slot_id, group in itertools.groupby(functions, _slot)]
        return tools.build_each(
            self.name, cards, lambda card: self._device(ctx.host, card))

    def health(self, device):
        """The PCI card checks of the control function (the management
        one when the card shows it): answers, AER, link, hwmon. A
        management function on no driver degrades the card: xbmgmt
        cannot program it."""
        address = tools.control_address(device)
        return health.check_device(device, needs_driver=(
            device.vendor_board_info.get('management_function') == address))

    def metrics(self, device):
        """AER counts, temperature and power from sysfs."""
        return telemetry.sample_device(device)

    def program(self, device, deployable, image_path):
        """Flash the base (shell) image with XRT's xbmgmt, which works on
        the management function only."""
        address = tools.control_address(device)
        if device.vendor_board_info.get('management_function') != address:
            raise exception.DriverError(
                driver=self.name,
                reason='%s is not a management function; xbmgmt cannot '
                       'program the card through it' % address)
        cmd = [CONF.fpga.xbmgmt_path, 'program', '--device', address,
               '--base', '--image', image_path]
        tools.run(self.name, cmd, CONF.fpga.program_timeout,
                  inputs=[image_path])

    def scrub(self, device, deployable):
        """Flash ``[fpga] default_image`` with ``program`` when it is set,
        else reset the user function guests get."""
        return pci.reprogram_or_reset(self, device, deployable,
                                      CONF.fpga.default_image)

    def _device(self, host, card):
        mgmt = next((fn for fn in card if role(fn) == MGMT), None)
        user = next((fn for fn in card if role(fn) == USER), None)
        if mgmt is None and user is None:
            return None
        if mgmt is not None:
            card_id = mgmt.device_id
        else:
            card_id = _MGMT_OF_USER.get(user.device_id, user.device_id)
        model, user_id = CARDS.get(card_id, ('Xilinx 0x%s' % card_id, ''))
        golden = mgmt is not None and user_id is None
        info, defects, deployables = {}, [], []
        if mgmt is not None:
            info['management_function'] = str(mgmt.address)
        if golden:
            info['image'] = GOLDEN
        elif user is None:
            defects.append(_missing(
                mgmt, USER_FUNCTION, 'no readable user function: the card '
                'offers nothing to guests'))
        if user is not None:
            info['user_function'] = str(user.address)
            deployables.append(self._deployable(host, user, card_id))
        if mgmt is None:
            defects.append(_missing(
                user, MGMT_FUNCTION, 'no readable management function: the '
                'card cannot be programmed, and its health is read from the '
                'user function'))
        control = mgmt or user
        return pci.device(
            control, 'FPGA', model, deployables, self.name,
            services=[SERVICE_SHELL] if mgmt is not None else [],
            vendor_info=info, functions=[fn for fn in (mgmt, user) if fn],
            defects=defects, offer_reason=_why_unoffered(golden))

    def _deployable(self, host, user, card_id):
        # NOTE(fpga): the product id is the management function's, as the
        # card has always been named here: it identifies the card whatever
        # its user function shows, and device profiles keep matching.
        return report.Deployable(
            name=pci.deployable_name(host, user),
            num_accelerators=1,
            resource_class=orc.FPGA,
            traits=sorted([pci.OWNER_TRAIT,
                           pci.trait('FPGA', pci.vendor_name(VENDOR_ID)),
                           pci.trait('FPGA_PRODUCT_ID', card_id)]),
            attach_handles=[pci.pci_handle(user)],
            driver_name=self.name)
