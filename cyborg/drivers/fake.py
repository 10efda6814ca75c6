"""A driver that reports simulated FPGA devices without any hardware."""

import re
import time

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import report

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

_UNSAFE = re.compile(r'[^A-Za-z0-9_-]')


class FakeDriver(base.AcceleratorDriver):
    """Reports ``[fake_driver] device_count`` FPGA cards with TEST_PCI handles.

    The first card matches upstream's fake device (vendor 0xABCD at
    0000:0c:00.0, deployable ``<host>_FakeDevice``, resource class FPGA,
    trait CUSTOM_FAKE_DEVICE), so tooling written against it keeps working.
    """

    name = 'fake'
    scrub_group = 'fake_driver'

    def discover(self, ctx):
        prefix = _UNSAFE.sub('_', ctx.host)
        per_device = CONF.fake_driver.accelerators_per_device
        devices = []
        for index in range(CONF.fake_driver.device_count):
            bus = '%02x' % (0x0c + index)
            address = {'domain': '0000', 'bus': bus, 'device': '00',
                       'function': '0'}
            suffix = '' if index == 0 else str(index)
            handles = [
                report.AttachHandle(
                    attach_type=CONF.fake_driver.attach_type,
                    attach_info={'domain': '0000', 'bus': bus,
                                 'device': '%02x' % (slot // 8),
                                 'function': str(slot % 8)})
                for slot in range(per_device)]
            deployable = report.Deployable(
                name='%s_FakeDevice%s' % (prefix, suffix),
                num_accelerators=per_device,
                resource_class='FPGA',
                traits=['CUSTOM_FAKE_DEVICE'],
                attach_handles=handles,
                driver_name=self.name)
            devices.append(report.Device(
                type='FPGA',
                vendor='0xABCD',
                model='Fake FPGA',
                controlpath=report.ControlPath(cpid_type='PCI',
                                               cpid_info=address),
                std_board_info={'device_id': '0xabcd',
                                'class': 'Fake class'},
                vendor_board_info={'vendor_info': 'fake_vendor_info'},
                deployables=[deployable],
                driver_name=self.name,
                services=['fpga.function:fake']))
        return devices

    def prepare_handle(self, attach_type, attach_info, handle_uuid):
        """Take ``[fake_driver] prepare_delay``, then fail with
        ``[fake_driver] prepare_failure`` when it is set; no mdev is
        created."""
        # NOTE(fake): the delay lets a test kill the conductor of a bind
        # while the host-side work is still going on.
        LOG.info('Preparing handle %s takes %.1f s', handle_uuid,
                 CONF.fake_driver.prepare_delay)
        time.sleep(CONF.fake_driver.prepare_delay)
        reason = CONF.fake_driver.prepare_failure
        if reason:
            raise exception.DriverError(driver=self.name, reason=reason)

    def program(self, device, deployable, image_path):
        """Take ``[fake_driver] program_delay``; load nothing (there is no
        hardware), but log the programming, once per call."""
        LOG.info('Programming %s with %s (simulated) takes %.1f s',
                 deployable.name, image_path, CONF.fake_driver.program_delay)
        time.sleep(CONF.fake_driver.program_delay)
        LOG.info('Programmed %s (simulated)', deployable.name)

    def health(self, device):
        """Healthy, with no check run: the fake cards have no hardware."""
        return base.HEALTHY

    def release_handle(self, attach_type, attach_info, handle_uuid):
        """Nothing to remove: prepare_handle created nothing."""
        LOG.info('Releasing handle %s', handle_uuid)

    def scrub(self, device, deployable):
        """Fail with ``[fake_driver] scrub_failure`` when it is set; else
        take the path and clean nothing (there is no hardware)."""
        reason = CONF.fake_driver.scrub_failure
        if reason:
            raise exception.DriverError(driver=self.name, reason=reason)
        LOG.info('Scrubbed %s (simulated)', deployable.name)
        return True
