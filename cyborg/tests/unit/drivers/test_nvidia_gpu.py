"""Tests of the NVIDIA GPU driver on simulated GPU hosts."""

import logging
import os

from oslo_config import cfg
import pytest

from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import base
from cyborg.drivers import nvidia_gpu
from cyborg.tests.fixtures import gpu_fpga_hosts as hosts
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF
HOST = 'compute-1'
T4_VGPU = '0000:3b:00.0'
T4_PLAIN = '0000:5e:00.0'
A100 = '0000:af:00.0'
A100_VFS = ['0000:af:00.4', '0000:af:00.5', '0000:af:00.6', '0000:af:00.7']


def _discover(root=None, host=HOST):
    devices = pci_hosts.discover(nvidia_gpu.NvidiaGpuDriver(),
                                 root or pci_hosts.committed('gpu-host'), host)
    pci_hosts.check_report(host, devices)
    return pci_hosts.by_address(devices)


def _deployables(device):
    return {dep.name: dep for dep in device.deployables}


@pytest.fixture
def gpu_host(tmp_path):
    return hosts.build_gpu_host(str(tmp_path / 'gpu-host'))


def test_every_idle_gpu_is_a_pgpu_by_default():
    devices = _discover()
    # The ASPEED BMC display, the NIC and the A100's VFs are not GPUs
    # reported on their own.
    assert sorted(devices) == [T4_VGPU, T4_PLAIN, A100]
    for dev in devices.values():
        assert (dev.type, dev.vendor) == ('GPU', '0x10de')
        assert dev.driver_name == 'nvidia_gpu'
        assert dev.warnings == []
    # NOTE(tests): the A100's first VF holds a vGPU of nvidia-471, which
    # no option enables: it is not offered whole, but in that type's mode
    # (before offer reasons it offered nothing, silently).
    a100 = devices[A100]
    assert (a100.mode, a100.services) == ('sriov-vgpu:nvidia-471',
                                          ['vgpu:nvidia-471'])
    (dep,) = a100.deployables
    assert (dep.resource_class, dep.num_accelerators) == ('VGPU', 4)
    for address in (T4_VGPU, T4_PLAIN):
        dev = devices[address]
        assert dev.services == ['gpu.compute']
        (dep,) = dev.deployables
        assert dep.name == '%s_%s' % (HOST, address)
        assert (dep.resource_class, dep.num_accelerators) == ('PGPU', 1)
        assert [(h.attach_type, h.attach_info)
                for h in dep.attach_handles] == [
                    ('PCI', hosts.pci_info(address))]
    assert devices[T4_VGPU].deployables[0].traits == [
        'OWNER_CYBORG', 'CUSTOM_NVIDIA_1EB8']
    info = devices[A100].std_board_info
    assert (info['numa_node'], info['iommu_group'], info['kernel_driver'],
            info['device_id']) == (1, '120', 'nvidia', '0x20b0')


def _names(devices):
    return {dep.name for dev in devices.values() for dep in dev.deployables}


def test_names_are_unique_across_hosts(vgpu):
    vgpu({'nvidia-222': None, 'nvidia-471': None})
    one = _names(_discover(host='compute-1'))
    two = _names(_discover(host='compute-2'))
    # Two deployables of the T4s, one of the A100's type on its VFs.
    assert len(one) == len(two) == 3
    assert not one & two


def test_vgpu_types_of_a_t4(vgpu):
    vgpu({'nvidia-222': None, 'nvidia-223': None})
    devices = _discover()
    t4 = devices[T4_VGPU]
    assert t4.services == ['vgpu:nvidia-222', 'vgpu:nvidia-223']
    deps = _deployables(t4)
    assert sorted(deps) == ['%s_%s_nvidia-222' % (HOST, T4_VGPU),
                            '%s_%s_nvidia-223' % (HOST, T4_VGPU)]
    one_b = deps['%s_%s_nvidia-222' % (HOST, T4_VGPU)]
    assert (one_b.resource_class, one_b.num_accelerators) == ('VGPU', 16)
    assert one_b.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_1EB8_GRID_T4_1B']
    assert {h.attach_type for h in one_b.attach_handles} == {'MDEV'}
    assert one_b.attach_handles[0].attach_info == dict(
        hosts.pci_info(T4_VGPU), asked_type='nvidia-222',
        vgpu_mark='nvidia-222_0')
    assert [h.attach_info['vgpu_mark'] for h in one_b.attach_handles] == [
        'nvidia-222_%d' % n for n in range(16)]
    two_b = deps['%s_%s_nvidia-223' % (HOST, T4_VGPU)]
    assert two_b.num_accelerators == 8
    assert two_b.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_1EB8_GRID_T4_2B']
    # The other T4 offers no vGPU type: still a PGPU.
    assert [d.resource_class for d in devices[T4_PLAIN].deployables] == [
        'PGPU']


def test_vgpu_types_on_ampere_vfs(vgpu):
    vgpu({'nvidia-471': None})
    a100 = _discover()[A100]
    assert a100.services == ['vgpu:nvidia-471']
    # One deployable for the GPU: its VFs are where the vGPUs go.
    (dep,) = a100.deployables
    assert dep.name == '%s_%s_nvidia-471' % (HOST, A100)
    # The first VF holds a created mdev, the others one free vGPU each;
    # max_instance (10) is more than the 4 VFs.
    assert (dep.resource_class, dep.num_accelerators) == ('VGPU', 4)
    assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_20B0_GRID_A100_4C']
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('MDEV', dict(hosts.pci_info(vf), asked_type='nvidia-471',
                      vgpu_mark='nvidia-471_0')) for vf in A100_VFS]
    # The A100 controls the device but is not offered whole any more.
    assert a100.controlpath.cpid_info == hosts.pci_info(A100)


def test_a_type_without_capacity_is_left_out(vgpu, caplog):
    vgpu({'nvidia-472': None})
    caplog.set_level(logging.WARNING)
    a100 = _discover()[A100]
    # The first VF runs an nvidia-471 vGPU, and time-sliced vGPUs on one
    # GPU share a type: every VF reads 0 for nvidia-472. The GPU serves
    # vGPUs, so it is not offered whole either.
    assert (a100.deployables, a100.services) == ([], [])
    # The type is there, only full: no "no GPU offers it" warning.
    assert 'nvidia-472' not in caplog.text


def test_device_addresses_select_a_vf(vgpu):
    vgpu({'nvidia-471': [A100_VFS[1]]})
    a100 = _discover()[A100]
    (dep,) = a100.deployables
    assert dep.name == '%s_%s_nvidia-471' % (HOST, A100)
    assert [h.attach_info for h in dep.attach_handles] == [dict(
        hosts.pci_info(A100_VFS[1]), asked_type='nvidia-471',
        vgpu_mark='nvidia-471_0')]


def test_device_addresses_naming_the_pf_select_its_vfs(vgpu):
    vgpu({'nvidia-471': [A100], 'nvidia-222': [T4_VGPU]})
    devices = _discover()
    (dep,) = devices[A100].deployables
    assert len(dep.attach_handles) == 4
    assert [d.resource_class for d in devices[T4_VGPU].deployables] == [
        'VGPU']


def test_device_addresses_leave_other_gpus_whole(vgpu, caplog):
    vgpu({'nvidia-222': [T4_PLAIN]})
    caplog.set_level(logging.WARNING)
    devices = _discover()
    # The only GPU offering nvidia-222 is not selected: it stays a PGPU.
    assert [d.resource_class for d in devices[T4_VGPU].deployables] == [
        'PGPU']
    warnings = [r.getMessage() for r in caplog.records
                if r.name == nvidia_gpu.__name__]
    assert len(warnings) == 1
    assert 'nvidia-222' in warnings[0]
    assert 'vgpu_nvidia-222' in warnings[0]


def test_device_address_not_offering_the_type_is_logged(vgpu, caplog):
    vgpu({'nvidia-222': [T4_VGPU, T4_PLAIN]})
    caplog.set_level(logging.WARNING)
    devices = _discover()
    assert len(devices[T4_VGPU].deployables) == 1
    assert [r.getMessage() for r in caplog.records
            if r.name == nvidia_gpu.__name__] == [
        '[vgpu_nvidia-222] device_addresses names %s, but no GPU or VF '
        'there offers nvidia-222' % T4_PLAIN]


def test_bad_device_address_selects_nothing(vgpu, caplog):
    vgpu({'nvidia-222': ['not-an-address']})
    caplog.set_level(logging.WARNING)
    devices = _discover()
    assert [d.resource_class for d in devices[T4_VGPU].deployables] == [
        'PGPU']
    assert "'not-an-address' is not a PCI address" in caplog.text


def test_unknown_type_is_one_warning(vgpu, caplog):
    vgpu({'nvidia-999': None})
    caplog.set_level(logging.WARNING)
    driver = nvidia_gpu.NvidiaGpuDriver()
    ctx = base.DiscoveryContext(HOST, pci_hosts.committed('gpu-host'))
    devices = driver.discover(ctx)
    # The A100 holds a vGPU of a type not enabled: in that type's mode.
    assert [dep.resource_class for d in devices for dep in d.deployables
            ] == ['PGPU', 'PGPU', 'VGPU']
    driver.discover(base.DiscoveryContext(
        HOST, pci_hosts.committed('gpu-host')))
    records = [r for r in caplog.records if r.name == nvidia_gpu.__name__]
    assert [r.levelno for r in records] == [logging.WARNING]
    assert records[0].getMessage() == (
        'vGPU type nvidia-999 is enabled but no GPU offers it')


def test_vgpu_groups_are_registered_by_the_driver(override):
    override('enabled_vgpu_types', ['nvidia-35'], group='gpu_devices')
    nvidia_gpu.NvidiaGpuDriver()
    assert CONF['vgpu_nvidia-35'].device_addresses == []
    assert gpu_conf.list_opts()[gpu_conf.GROUP][0].name == (
        'enabled_vgpu_types')
    assert CONF.gpu_devices.filter_sriov_vfs is True


def test_vfs_as_pgpus_when_not_filtered(override):
    override('filter_sriov_vfs', False, group='gpu_devices')
    devices = _discover()
    a100 = devices[A100]
    # The first VF holds a vGPU: busy, it is not offered whole.
    assert sorted(_deployables(a100)) == ['%s_%s' % (HOST, vf)
                                          for vf in A100_VFS[1:]]
    for dep in a100.deployables:
        assert (dep.resource_class, dep.num_accelerators) == ('PGPU', 1)
        assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_20B0']
    # GPUs without VFs are not affected.
    assert len(devices[T4_PLAIN].deployables) == 1


def test_vfs_split_between_vgpu_and_pgpu(override, vgpu):
    override('filter_sriov_vfs', False, group='gpu_devices')
    vgpu({'nvidia-471': [A100_VFS[1]]})
    a100 = _discover()[A100]
    kinds = {name: dep.resource_class
             for name, dep in _deployables(a100).items()}
    # The first VF holds a vGPU; the second is the vGPU parent.
    assert kinds == {
        '%s_%s_nvidia-471' % (HOST, A100): 'VGPU',
        '%s_%s' % (HOST, A100_VFS[2]): 'PGPU',
        '%s_%s' % (HOST, A100_VFS[3]): 'PGPU'}
    vgpu_dep = _deployables(a100)['%s_%s_nvidia-471' % (HOST, A100)]
    assert [hosts.pci_info(A100_VFS[1])] == [
        {k: h.attach_info[k] for k in ('domain', 'bus', 'device',
                                       'function')}
        for h in vgpu_dep.attach_handles]
    assert a100.services == ['gpu.compute', 'vgpu:nvidia-471']


def _dev_dir(root, address):
    return os.path.join(root, 'bus', 'pci', 'devices', address)


def _write(path, value):
    with open(path, 'w') as out:
        out.write(value)


def _relink(link, target):
    os.remove(link)
    os.symlink(target, link)


@pytest.mark.parametrize('breakage, gone', [
    ('missing_vendor', T4_PLAIN),
    ('garbage_class', T4_VGPU),
])
def test_a_gpu_whose_identity_is_broken_is_left_out(gpu_host, caplog,
                                                    breakage, gone):
    if breakage == 'missing_vendor':
        os.remove(os.path.join(_dev_dir(gpu_host, T4_PLAIN), 'vendor'))
    else:
        _write(os.path.join(_dev_dir(gpu_host, T4_VGPU), 'class'), 'VGA\n')
    caplog.set_level(logging.WARNING)
    devices = _discover(gpu_host)
    assert sorted(devices) == sorted({T4_VGPU, T4_PLAIN, A100} - {gone})
    assert all(dev.warnings == [] for dev in devices.values())
    assert 'left out' in caplog.text and gone in caplog.text


def _a100_vgpu_parents(devices):
    (dep,) = devices[A100].deployables
    return ['%(domain)s:%(bus)s:%(device)s.%(function)s' % h.attach_info
            for h in dep.attach_handles]


def test_a_dangling_physfn_loses_only_that_vf(gpu_host, vgpu):
    _relink(os.path.join(_dev_dir(gpu_host, A100_VFS[2]), 'physfn'),
            '../0000:ae:00.0')
    vgpu({'nvidia-471': None})
    devices = _discover(gpu_host)
    assert sorted(devices) == [T4_VGPU, T4_PLAIN, A100]
    assert _a100_vgpu_parents(devices) == [
        A100_VFS[0], A100_VFS[1], A100_VFS[3]]
    assert devices[A100].warnings == [
        'bus/pci/devices/%s/virtfn2: links to %s, which is not a VF of '
        'this function' % (A100, A100_VFS[2])]


def test_a_dangling_virtfn_loses_only_that_vf(gpu_host, vgpu):
    _relink(os.path.join(_dev_dir(gpu_host, A100), 'virtfn1'),
            '../0000:af:01.0')
    vgpu({'nvidia-471': None})
    devices = _discover(gpu_host)
    assert sorted(devices) == [T4_VGPU, T4_PLAIN, A100]
    assert _a100_vgpu_parents(devices) == [
        A100_VFS[0], A100_VFS[2], A100_VFS[3]]
    # The VF is still there, its physfn link names the A100: lost to it.
    assert devices[A100].warnings == [
        'bus/pci/devices/%s/virtfn1: links to 0000:af:01.0, which is no '
        'readable PCI function' % A100,
        'bus/pci/devices/%s/physfn: %s has no virtfn link to this VF: it '
        'is left out' % (A100_VFS[1], A100)]


def test_unreadable_available_instances_skips_that_type(gpu_host, vgpu,
                                                        caplog):
    _write(os.path.join(_dev_dir(gpu_host, T4_VGPU), 'mdev_supported_types',
                        'nvidia-223', 'available_instances'), 'many\n')
    vgpu({'nvidia-222': None, 'nvidia-223': None})
    caplog.set_level(logging.WARNING)
    t4 = _discover(gpu_host)[T4_VGPU]
    assert sorted(_deployables(t4)) == [
        '%s_%s_nvidia-222' % (HOST, T4_VGPU)]
    assert 'nvidia-223' in caplog.text
    assert t4.warnings == [
        'bus/pci/devices/%s/mdev_supported_types/nvidia-223/'
        'available_instances: unreadable available_instances: the type is '
        'left out' % T4_VGPU]


def test_health(gpu_host, override):
    override('sysfs_root', gpu_host, group='agent')
    driver = nvidia_gpu.NvidiaGpuDriver()
    devices = _discover(gpu_host)
    assert all(driver.health(dev).ok for dev in devices.values())
    _write(os.path.join(_dev_dir(gpu_host, T4_PLAIN), 'vendor'), '0xffff\n')
    health = driver.health(devices[T4_PLAIN])
    assert not health.ok and 'fell off the bus' in health.reason
    os.remove(os.path.join(_dev_dir(gpu_host, A100), 'config'))
    health = driver.health(devices[A100])
    assert not health.ok and 'unreadable' in health.reason
    with open(os.path.join(_dev_dir(gpu_host, T4_VGPU), 'config'),
              'wb') as out:
        out.write(b'\xff' * 64)
    health = driver.health(devices[T4_VGPU])
    assert not health.ok and 'config space' in health.reason


def test_install_has_nothing_to_prepare():
    driver = nvidia_gpu.NvidiaGpuDriver()
    dev = _discover()[T4_VGPU]
    assert driver.install(dev) is None
    assert driver.uninstall(dev) is None
