"""Randomly damaged sysfs trees never crash discovery (hypothesis)."""

import os
import shutil

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from cyborg.agent import resource_tracker
from cyborg.tests.fixtures import pci_hosts

DRIVERS = ['pci_driver', 'nvidia_gpu_driver', 'intel_fpga_driver',
           'xilinx_fpga_driver', 'intel_qat_driver', 'huawei_ascend_driver']
HOSTS = ['gpu-host', 'fpga-host', 'qat-host', 'pci-host', 'ascend-host']
DAMAGE = ('delete', 'empty', 'garbage', 'binary', 'dangle', 'directory',
          'loop')
# A spec that claims every PCI function, so the generic driver reads all.
EVERYTHING = '{"vendor_id": "*", "product_id": "*"}'


def _entries(root):
    """Files and links under the device directories, in a stable order."""
    found = []
    for top in ('devices', 'class'):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames + [
                    d for d in dirnames
                    if os.path.islink(os.path.join(dirpath, d))]):
                found.append(os.path.join(dirpath, name))
    return found


def _damage(path, how, data):
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    if how == 'delete':
        return
    if how == 'dangle':
        os.symlink('../../nowhere/%s' % data.hex(), path)
    elif how == 'loop':
        os.symlink(os.path.basename(path), path)
    elif how == 'directory':
        os.makedirs(path)
    else:
        content = {'empty': b'', 'garbage': data.hex().encode() + b'\n',
                   'binary': data}[how]
        with open(path, 'wb') as out:
            out.write(content)


@pytest.fixture(scope='module')
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp('hosts')
    for name in HOSTS:
        shutil.copytree(pci_hosts.committed(name), base / name,
                        symlinks=True)
    return base


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(host=st.sampled_from(HOSTS),
       damages=st.lists(st.tuples(st.integers(min_value=0),
                                  st.sampled_from(DAMAGE),
                                  st.binary(min_size=1, max_size=16)),
                        min_size=1, max_size=6))
def test_discovery_survives_damage(trees, tmp_path_factory, override, host,
                                   damages):
    root = tmp_path_factory.mktemp('damaged') / host
    shutil.copytree(trees / host, root, symlinks=True)
    entries = _entries(str(root))
    for index, how, data in damages:
        path = entries[index % len(entries)]
        if os.path.lexists(path) or os.path.isdir(os.path.dirname(path)):
            _damage(path, how, data)
    override('sysfs_root', str(root), group='agent')
    override('device_spec', [EVERYTHING], group='pci')
    override('enabled_vgpu_types', ['nvidia-222', 'nvidia-471'],
             group='gpu_devices')
    tracker = resource_tracker.ResourceTracker('h', DRIVERS)
    host_report, failed = tracker.discover()
    # A damaged device is skipped; no driver gives up on the whole host.
    assert failed == []
    for device in host_report.devices:
        for deployable in device.deployables:
            assert deployable.num_accelerators >= 0
            assert deployable.name.startswith('h_')


def test_undamaged_hosts_report_everything(trees, override):
    override('device_spec', [EVERYTHING], group='pci')
    for host in HOSTS:
        override('sysfs_root', str(trees / host), group='agent')
        tracker = resource_tracker.ResourceTracker('h', DRIVERS)
        host_report, failed = tracker.discover()
        assert failed == [] and host_report.devices, host
