"""Every driver at once on a two-socket host with twelve accelerators."""

import pytest

from cyborg.agent import resource_tracker
from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import sysfs
from cyborg.drivers import tools
from cyborg.tests import damage_fuzz
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.fixtures import two_socket_host as tsh

DRIVERS = ['nvidia_gpu_driver', 'intel_fpga_driver', 'xilinx_fpga_driver',
           'intel_qat_driver', 'huawei_ascend_driver', 'pci_driver']
NVME_SPEC = '{"vendor_id": "144d", "product_id": "a808"}'
EVERYTHING = '{"vendor_id": "*", "product_id": "*"}'
QAT_ALL = ['compression', 'crypto.asym', 'crypto.sym']


def _fpga(model, region, afu):
    return (['CUSTOM_FPGA_FUNCTION_ID_INTEL_%s' % afu.upper(),
             'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_%s' % model,
             'CUSTOM_FPGA_REGION_INTEL_%s' % region.upper(), 'OWNER_CYBORG'],
            ['fpga.function:%s' % afu, 'fpga.region:%s' % region])


def _qat(product, *services):
    return sorted(['CUSTOM_QAT', 'CUSTOM_QAT_PRODUCT_ID_%s' % product,
                   'OWNER_CYBORG'] +
                  ['CUSTOM_QAT_%s' % s.upper().replace('.', '_')
                   for s in services])


def _vfs(bus, slot, functions):
    return ['0000:%s:%02x.%d' % (bus, slot, f) for f in functions]


N3000_TRAITS, N3000_SERVICES = _fpga('N3000', tsh.fpga.N3000_INTERFACE,
                                     tsh.fpga.N3000_AFU)
A10_TRAITS, A10_SERVICES = _fpga('ARRIA10', tsh.fpga.A10_INTERFACE,
                                 tsh.fpga.A10_AFU)
D5005_TRAITS, D5005_SERVICES = _fpga('D5005', tsh.fpga.D5005_INTERFACE,
                                     tsh.fpga.D5005_AFU)
C62X_VFS = _vfs('3d', 1, range(8))
GEN4_VFS = _vfs('87', 0, range(1, 5))
GEN4_DC_VFS = _vfs('88', 0, range(1, 5))
T4_1B_TRAITS = ['CUSTOM_NVIDIA_1EB8_GRID_T4_1B', 'OWNER_CYBORG']
A100_4C_TRAITS = ['CUSTOM_NVIDIA_20F1_GRID_A100_4C', 'OWNER_CYBORG']
# 16 VFs, one vGPU each, but max_instance of A100-4C is 10 per GPU.
A100_4C_VFS = _vfs('5e', 0, range(4, 8)) + _vfs('5e', 1, range(6))

#: Control address -> (type, driver, model, services, deployables), each
#: deployable (name suffix, resource class, traits, handle addresses),
#: with no vGPU type enabled: the T4 and the A100 hold a vGPU each, so
#: they are not offered whole but in the mode of that vGPU's type (before
#: offer reasons they offered nothing).
INVENTORY = {
    tsh.NVME: ('NVME', 'pci', '144d:a808', ['pci.passthrough'], [
        (tsh.NVME, 'CUSTOM_PCI', ['CUSTOM_PCI_144D',
                                  'CUSTOM_PCI_PRODUCT_ID_A808',
                                  'OWNER_CYBORG'], [tsh.NVME])]),
    tsh.N3000: ('FPGA', 'intel_fpga', 'Intel PAC N3000', N3000_SERVICES, [
        (tsh.N3000, 'FPGA', N3000_TRAITS, [tsh.N3000])]),
    tsh.PAC_A10: ('FPGA', 'intel_fpga', 'Intel PAC Arria 10 GX',
                  A10_SERVICES, [
                      (tsh.PAC_A10, 'FPGA', A10_TRAITS, [tsh.PAC_A10_VF])]),
    tsh.T4: ('GPU', 'nvidia_gpu', 'NVIDIA GPU 0x1eb8', ['vgpu:nvidia-222'], [
        (tsh.T4 + '_nvidia-222', 'VGPU', T4_1B_TRAITS, [tsh.T4] * 16)]),
    tsh.QAT_C62X: ('QAT', 'intel_qat', 'C62x', QAT_ALL, [
        (tsh.QAT_C62X, 'CUSTOM_QAT', _qat('37C8', *QAT_ALL), C62X_VFS)]),
    tsh.A100: ('GPU', 'nvidia_gpu', 'NVIDIA GPU 0x20f1', ['vgpu:nvidia-471'],
               [(tsh.A100 + '_nvidia-471', 'VGPU', A100_4C_TRAITS,
                 A100_4C_VFS)]),
    tsh.ALVEO_MGMT: ('FPGA', 'xilinx_fpga', 'Alveo U250', ['fpga.shell'], [
        (tsh.ALVEO_USER, 'FPGA', ['CUSTOM_FPGA_PRODUCT_ID_5004',
                                  'CUSTOM_FPGA_XILINX', 'OWNER_CYBORG'],
         [tsh.ALVEO_USER])]),
    tsh.QAT_4XXX: ('QAT', 'intel_qat', '4xxx', ['crypto.asym', 'crypto.sym'],
                   [(tsh.QAT_4XXX, 'CUSTOM_QAT',
                     _qat('4940', 'crypto.asym', 'crypto.sym'), GEN4_VFS)]),
    tsh.QAT_401XX: ('QAT', 'intel_qat', '401xx', ['compression'], [
        (tsh.QAT_401XX, 'CUSTOM_QAT', _qat('4942', 'compression'),
         GEN4_DC_VFS)]),
    tsh.A10_VFIO: ('GPU', 'nvidia_gpu', 'NVIDIA GPU 0x2236', ['gpu.compute'],
                   [(tsh.A10_VFIO, 'PGPU', ['CUSTOM_NVIDIA_2236',
                                            'OWNER_CYBORG'],
                     [tsh.A10_VFIO])]),
    tsh.D5005: ('FPGA', 'intel_fpga', 'Intel PAC D5005', D5005_SERVICES, [
        (tsh.D5005, 'FPGA', D5005_TRAITS, [tsh.D5005])]),
    tsh.ASCEND: ('AICHIP', 'huawei_ascend', 'Ascend 310P', ['npu.compute'], [
        (tsh.ASCEND, 'CUSTOM_NPU', ['CUSTOM_NPU_HUAWEI',
                                    'CUSTOM_NPU_PRODUCT_ID_D500',
                                    'OWNER_CYBORG'], [tsh.ASCEND])]),
    tsh.RTX: ('GPU', 'nvidia_gpu', 'NVIDIA GPU 0x1e30', ['gpu.compute'], [
        (tsh.RTX, 'PGPU', ['CUSTOM_NVIDIA_1E30', 'OWNER_CYBORG'],
         [tsh.RTX])]),
}
ACCELERATORS = set(INVENTORY) - {tsh.NVME}


def _address(info):
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info


def _discover(override, host, vgpu_types=(), spec=NVME_SPEC):
    override('sysfs_root', pci_hosts.committed(host), group='agent')
    override('device_spec', [spec], group='pci')
    override('enabled_vgpu_types', list(vgpu_types), group='gpu_devices')
    host_report, failed = resource_tracker.ResourceTracker(
        'compute-1', DRIVERS).discover()
    assert failed == []
    pci_hosts.check_report('compute-1', host_report.devices)
    return host_report, pci_hosts.by_address(host_report.devices)


def _summary(device):
    return (device.type, device.driver_name, device.model, device.services,
            [(dep.name[len('compute-1_'):], dep.resource_class,
              sorted(dep.traits),
              [_address(h.attach_info) for h in dep.attach_handles])
             for dep in device.deployables])


@pytest.mark.parametrize('host', [tsh.NAME, tsh.DAMAGED])
def test_committed_tree_equals_a_fresh_build(host, tmp_path):
    fresh = pci_hosts.snapshot(tsh.HOSTS[host](str(tmp_path)))
    assert pci_hosts.snapshot(pci_hosts.committed(host)) == fresh


def test_every_accelerator_is_found_as_the_kernel_shows_it(override):
    _report, found = _discover(override, tsh.NAME)
    assert len(ACCELERATORS) == 12
    assert {address: _summary(device) for address, device in found.items()
            } == INVENTORY
    assert all(device.warnings == [] for device in found.values())
    for address, device in found.items():
        for dep in device.deployables:
            assert dep.num_accelerators == len(dep.attach_handles), address


def test_vgpu_types_on_the_pf_and_on_the_vfs(override):
    gpu_conf.register_dynamic_opts(gpu_conf.cfg.CONF)
    _report, found = _discover(override, tsh.NAME,
                               ['nvidia-222', 'nvidia-471'])
    (t4,) = found[tsh.T4].deployables
    # a time-sliced T4 holding one T4-1B: that type up to its max_instance
    assert (t4.name, t4.resource_class, t4.num_accelerators) == (
        'compute-1_%s_nvidia-222' % tsh.T4, 'VGPU', 16)
    assert {h.attach_type for h in t4.attach_handles} == {'MDEV'}
    assert {_address(h.attach_info) for h in t4.attach_handles} == {tsh.T4}
    (a100,) = found[tsh.A100].deployables
    # 16 VFs, one vGPU each, but max_instance of A100-4C is 10 per GPU
    assert (a100.name, a100.resource_class, a100.num_accelerators) == (
        'compute-1_%s_nvidia-471' % tsh.A100, 'VGPU', 10)
    assert [_address(h.attach_info) for h in a100.attach_handles] == (
        A100_4C_VFS)
    assert sorted(a100.traits) == A100_4C_TRAITS


def test_the_t4_is_offered_in_the_mode_of_the_vgpu_it_holds(override):
    # NOTE(tests): one T4-1B made outside Cyborg, no mode chosen and no
    # vGPU type enabled: the T4 cannot be passed through, and the kernel
    # offers no other type beside the vGPU, so it takes that type's mode.
    _report, found = _discover(override, tsh.NAME)
    t4 = found[tsh.T4]
    assert (t4.mode, t4.services, t4.offer_reason) == (
        'vgpu:nvidia-222', ['vgpu:nvidia-222'], None)
    assert 'passthrough' in t4.modes
    (dep,) = t4.deployables
    # 15 can still be made and 1 exists: the type's 16 on this GPU.
    kind = sysfs.Sysfs(pci_hosts.committed(tsh.NAME)).pci_function(
        tsh.T4).mdev_types()['nvidia-222']
    assert (kind.available_instances, kind.created) == (15, 1)
    assert (dep.name, dep.resource_class, dep.num_accelerators) == (
        'compute-1_%s_nvidia-222' % tsh.T4, 'VGPU', 16)
    assert [h.attach_info['vgpu_mark'] for h in dep.attach_handles] == [
        'nvidia-222_%d' % n for n in range(16)]
    # Enabling the type it holds changes nothing.
    gpu_conf.register_dynamic_opts(gpu_conf.cfg.CONF)
    _report, enabled = _discover(override, tsh.NAME, ['nvidia-222'])
    assert enabled[tsh.T4].deployables == t4.deployables


def test_no_function_is_claimed_twice_or_by_the_generic_driver(override):
    host_report, found = _discover(override, tsh.NAME, spec=EVERYTHING)
    owners = damage_fuzz.claimed(host_report)
    assert all(len(devices) == 1 for devices in owners.values()), owners
    generic = sorted(address for address, device in found.items()
                     if device.driver_name == 'pci')
    # the board's NVMe and NIC; never the platform, the chipset, another
    # driver's functions, nor the GPU's audio, USB and UCSI functions,
    # which share its IOMMU group
    assert generic == [tsh.NVME, tsh.NIC]
    assert set(found) - set(generic) == ACCELERATORS


def test_a_damaged_host_loses_only_what_is_damaged(override):
    _report, found = _discover(override, tsh.DAMAGED)
    assert set(found) == set(INVENTORY)
    warned = {address: device.warnings for address, device in found.items()
              if device.warnings}
    assert warned == {
        tsh.A100: [
            'bus/pci/devices/%s/virtfn3: links to 0000:5e:1f.7, which is '
            'no readable PCI function' % tsh.A100,
            'bus/pci/devices/0000:5e:00.7/physfn: %s has no virtfn link to '
            'this VF: it is left out' % tsh.A100],
        tsh.QAT_C62X: [
            'bus/pci/devices/%s/virtfn2: links to 0000:3d:01.2, which is '
            'no readable PCI function' % tsh.QAT_C62X],
        tsh.QAT_4XXX: [
            'bus/pci/devices/%s/qat/cfg_services: unreadable: the services '
            'are unknown' % tsh.QAT_4XXX],
    }
    expected = dict(INVENTORY)
    kind, driver, model, services, [(name, rc, traits, vfs)] = expected[
        tsh.QAT_C62X]
    expected[tsh.QAT_C62X] = (kind, driver, model, services, [
        (name, rc, traits, [vf for vf in vfs if vf != '0000:3d:01.2'])])
    kind, driver, model, _services, [(name, rc, _traits, vfs)] = expected[
        tsh.QAT_4XXX]
    expected[tsh.QAT_4XXX] = (kind, driver, model, [], [
        (name, rc, _qat('4940'), vfs)])
    # The A100's VF it lost is no vGPU parent: the next free one is.
    kind, driver, model, services, [(name, rc, traits, _vfs_)] = expected[
        tsh.A100]
    expected[tsh.A100] = (kind, driver, model, services, [
        (name, rc, traits, _vfs('5e', 0, range(4, 7)) +
         _vfs('5e', 1, range(7)))])
    assert {address: _summary(device) for address, device in found.items()
            } == expected
    assert tools.control_address(found[tsh.A100]) == tsh.A100
