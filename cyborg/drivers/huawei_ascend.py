"""Huawei Ascend driver: NPU cards, each passed through whole."""

import functools

from oslo_config import cfg

from cyborg.drivers import base
from cyborg.drivers import health
from cyborg.drivers import pci
from cyborg.drivers import report
from cyborg.drivers import telemetry
from cyborg.drivers import tools

CONF = cfg.CONF

HUAWEI = '19e5'
SERVICES = ('npu.compute',)
MODELS = {'d100': 'Ascend 310', 'd500': 'Ascend 310P', 'd801': 'Ascend 910',
          'd802': 'Ascend 910B'}


def _device_ids(values):
    return frozenset(pci.hex_id(value) for value in values)


class HuaweiAscendDriver(base.AcceleratorDriver):
    """Reports each Ascend function as an AICHIP with one accelerator.

    Unlike upstream, the deployable is named ``<host>_<address>`` (names
    are Placement provider identities, so they must differ across hosts)
    and carries a resource class, ``[huawei_ascend] resource_class``.
    """

    name = 'huawei_ascend'
    scrub_group = 'huawei_ascend'

    def __init__(self):
        group = CONF.huawei_ascend
        self.device_ids = pci.checked(
            '[huawei_ascend] device_ids', _device_ids, group.device_ids)
        self.resource_class = pci.checked(
            '[huawei_ascend] resource_class', pci.resource_class_name,
            group.resource_class)

    def discover(self, ctx):
        return tools.build_each(self.name, ctx.sysfs.pci_functions,
                                functools.partial(self._device, ctx))

    def _device(self, ctx, fn):
        if fn.vendor_id != HUAWEI or fn.device_id not in self.device_ids:
            return None
        traits = [pci.OWNER_TRAIT, pci.trait('NPU', 'HUAWEI'),
                  pci.trait('NPU_PRODUCT_ID', fn.device_id)]
        deployable = report.Deployable(
            name=pci.deployable_name(ctx.host, fn), num_accelerators=1,
            resource_class=self.resource_class, traits=sorted(traits),
            attach_handles=[pci.pci_handle(fn)], driver_name=self.name)
        model = MODELS.get(fn.device_id, 'Ascend %s' % fn.device_id)
        return pci.device(fn, 'AICHIP', model, [deployable], self.name,
                          services=SERVICES)

    def scrub(self, device, deployable):
        """Reset the NPU's function, where the kernel offers a reset (see
        ``pci.reset_function``)."""
        return pci.reset_handles(deployable, self.name)

    def health(self, device):
        """The PCI card checks: answers, AER, link, hwmon temperatures."""
        return health.check_device(device)

    def metrics(self, device):
        """AER counts, temperature and power from sysfs."""
        return telemetry.sample_device(device)
