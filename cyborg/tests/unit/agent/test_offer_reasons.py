"""Each device of each committed fixture host offers something, or says why."""

import os

import pytest

from cyborg.agent import resource_tracker
from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.tests.fixtures import pci_hosts

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures',
                        'sysfs')
HOSTS = sorted(name for name in os.listdir(FIXTURES)
               if os.path.isdir(os.path.join(FIXTURES, name)))
EVERYTHING = '{"vendor_id": "*", "product_id": "*"}'
#: How each pass configures the drivers: every vGPU type the host shows
#: enabled (as tests/unit/test_capture_sysfs.py's ``discover``), none
#: (GPUs holding vGPUs take their type's mode), all but those that vGPUs
#: exist of (which leave no room for the others), and only functions on
#: a guest driver offered (QAT's host-bound functions are not).
CONFIGS = ('every vgpu type', 'no vgpu type', 'types no vgpu holds',
           'guest drivers only')


def _vgpu_types(root):
    """(every vGPU type the host shows, those that vGPUs exist of)."""
    types, held = set(), set()
    for dirpath, dirnames, _files in os.walk(os.path.join(root, 'devices')):
        if os.path.basename(dirpath) == 'mdev_supported_types':
            types.update(dirnames)
            held.update(name for name in dirnames if sysfs.listdir(
                os.path.join(dirpath, name, 'devices')))
    return sorted(types), held


def _discover(override, host, config):
    root = pci_hosts.committed(host)
    override('sysfs_root', root, group='agent')
    override('device_spec', [EVERYTHING], group='pci')
    types, held = _vgpu_types(root)
    enabled = {'every vgpu type': types, 'no vgpu type': [],
               'types no vgpu holds': [t for t in types if t not in held],
               'guest drivers only': []}[config]
    override('enabled_vgpu_types', enabled, group='gpu_devices')
    gpu_conf.register_dynamic_opts(gpu_conf.cfg.CONF)
    override('offer_host_bound_functions', config != 'guest drivers only',
             group='intel_qat')
    tracker = resource_tracker.ResourceTracker(
        'compute-1', resource_tracker.available_drivers())
    found, failed = tracker.discover()
    assert failed == []
    return found


def test_every_fixture_host_is_walked():
    # NOTE(tests): a fixture added later is walked without a change here.
    assert len(HOSTS) >= 16
    assert {'two-socket-host', 'nvidia-host', 'qat-host'} <= set(HOSTS)


@pytest.mark.parametrize('config', CONFIGS)
@pytest.mark.parametrize('host', HOSTS)
def test_no_device_offers_nothing_silently(override, host, config):
    found = _discover(override, host, config)
    assert found.devices, host
    for device in found.devices:
        where = (host, device.driver_name, device.controlpath.cpid_info)
        if device.deployables:
            assert device.offer_reason is None, where
            continue
        assert device.offer_reason, where
        # One line, in words: not the text of a device without one.
        assert '\n' not in device.offer_reason, where
        assert not device.offer_reason.startswith(
            report.UNEXPLAINED.split('%s')[0]), where
    back = report.HostReport.from_primitive(found.to_primitive())
    assert back == found


def test_the_walk_meets_devices_that_offer_nothing(override):
    # NOTE(tests): so that the walk above checks reasons, not only
    # deployables: the busy GPUs, QAT PFs and golden Alveos of the
    # fixtures offer nothing under some of its configurations.
    reasons = {}
    for host in HOSTS:
        for config in CONFIGS:
            for device in _discover(override, host, config).devices:
                if not device.deployables:
                    reasons.setdefault(device.driver_name, set()).add(
                        device.offer_reason)
    assert {'nvidia_gpu', 'intel_qat', 'xilinx_fpga'} <= set(reasons)
