"""The NVIDIA GPU driver on a host whose GPUs the kernel shows for vGPU."""

import os

from oslo_config import cfg
import pytest

from cyborg.drivers import base
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import report
from cyborg.tests import damage_fuzz
from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF
HOST = 'compute-1'
ALL_TYPES = [spec[0] for spec in nv.T4_TYPES + nv.A100_TYPES]
VFS = nv.A100_VFS
# What every GPU of nvidia-host offers when no vGPU type is enabled: the
# busy T4 and the A100 hold vGPUs of one type each, so they are not
# offered whole but in that type's mode, the vGPUs that exist counted.
IDLE = {
    nv.T4_BUSY: {nv.T4_BUSY + '_nvidia-222': ('VGPU', 16)},
    nv.T4_FRESH: {nv.T4_FRESH: ('PGPU', 1)},
    nv.A10_VFIO: {nv.A10_VFIO: ('PGPU', 1)},
    nv.A100_PF: {nv.A100_PF + '_nvidia-471': ('VGPU', 10)},
    nv.RTX: {nv.RTX: ('PGPU', 1)},
}


@pytest.fixture
def tree(tmp_path):
    """A writable copy of nvidia-host."""
    return pci_hosts.copy_host(nv.NAME, tmp_path / nv.NAME)


def _discover(root=None):
    devices = pci_hosts.discover(nvidia_gpu.NvidiaGpuDriver(),
                                 root or pci_hosts.committed(nv.NAME), HOST)
    pci_hosts.check_report(HOST, devices)
    return pci_hosts.by_address(devices)


def _inventory(devices):
    """{GPU: {deployable name less the host: (resource class, count)}}."""
    return {address: {dep.name[len(HOST) + 1:]: (dep.resource_class,
                                                 dep.num_accelerators)
                      for dep in dev.deployables}
            for address, dev in devices.items()}


def _parents(dep):
    return ['%(domain)s:%(bus)s:%(device)s.%(function)s' % h.attach_info
            for h in dep.attach_handles]


def _type_file(root, address, type_id, name):
    return os.path.join(root, 'bus', 'pci', 'devices', address,
                        'mdev_supported_types', type_id, name)


def _write(path, value):
    with open(path, 'wb') as out:
        out.write(value if isinstance(value, bytes) else value.encode())


def test_committed_tree_equals_a_fresh_build(tmp_path):
    fresh = pci_hosts.snapshot(nv.build_nvidia_host(str(tmp_path / 'fresh')))
    committed = pci_hosts.snapshot(pci_hosts.committed(nv.NAME))
    # NOTE(tests): regenerate with python -m
    # cyborg.tests.fixtures.nvidia_hosts when the builder changes.
    assert sorted(committed) == sorted(fresh)
    assert committed == fresh


def test_idle_gpus_are_pgpus_and_nothing_else_is_a_gpu():
    devices = _discover()
    # Not the BMC's display, not the A100's VFs, not the audio, USB and
    # UCSI functions of the RTX 6000's slot (the last one bound to a
    # driver called nvidia-gpu).
    assert _inventory(devices) == IDLE
    for address, dev in devices.items():
        assert (dev.type, dev.vendor, dev.warnings) == ('GPU', '0x10de', [])
        expected = ['vgpu:' + name.rsplit('_', 1)[1] if rc == 'VGPU'
                    else 'gpu.compute'
                    for name, (rc, _count) in IDLE[address].items()]
        assert (dev.services, dev.offer_reason) == (expected, None)
    rtx = devices[nv.RTX].deployables[0]
    assert rtx.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_1E30']
    assert [(h.attach_type, h.attach_info) for h in rtx.attach_handles] == [
        ('PCI', {'domain': '0000', 'bus': 'd8', 'device': '00',
                 'function': '0'})]
    assert devices[nv.RTX].model == 'NVIDIA GPU 0x1e30'


def test_a_gpu_bound_to_vfio_pci_is_a_pgpu(vgpu):
    vgpu({vgpu_type: None for vgpu_type in ALL_TYPES})
    a10 = _discover()[nv.A10_VFIO]
    (dep,) = a10.deployables
    assert (dep.name, dep.resource_class, dep.num_accelerators) == (
        '%s_%s' % (HOST, nv.A10_VFIO), 'PGPU', 1)
    assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_2236']
    assert a10.std_board_info['kernel_driver'] == 'vfio-pci'
    assert (a10.services, a10.warnings) == (['gpu.compute'], [])


def test_companion_functions_are_ignored_on_any_driver(tree, vgpu):
    # NOTE(tests): operators often bind all of a slot's functions to
    # vfio-pci for passthrough; they are still no GPUs.
    for address, *_rest in nv.RTX_COMPANIONS:
        link = os.path.join(tree, 'bus', 'pci', 'devices', address,
                            'driver')
        os.remove(link)
        os.symlink('../../../bus/pci/drivers/vfio-pci', link)
    vgpu({vgpu_type: None for vgpu_type in ALL_TYPES})
    devices = _discover(tree)
    companions = {address for address, *_rest in nv.RTX_COMPANIONS}
    seen = set(devices) | {
        parent for dev in devices.values() for dep in dev.deployables
        for parent in _parents(dep)}
    assert not seen & companions
    assert not any(dev.warnings for dev in devices.values())


# enabled types and their device_addresses -> what each GPU offers.
CONFIGS = {
    'every type': (
        {vgpu_type: None for vgpu_type in ALL_TYPES},
        dict(IDLE, **{
            # One T4-1B exists: 1 + 15 available, the other types read 0.
            nv.T4_BUSY: {nv.T4_BUSY + '_nvidia-222': ('VGPU', 16)},
            # Nothing exists yet: each type up to its max_instance.
            nv.T4_FRESH: {nv.T4_FRESH + '_nvidia-222': ('VGPU', 16),
                          nv.T4_FRESH + '_nvidia-223': ('VGPU', 8),
                          nv.T4_FRESH + '_nvidia-230': ('VGPU', 4)},
            # 2 VFs hold an A100-4C, 14 are free: max_instance says 10.
            nv.A100_PF: {nv.A100_PF + '_nvidia-471': ('VGPU', 10)}})),
    # The busy GPUs hold vGPUs of other types, which leave no room for
    # those enabled: nothing (an offer reason says why).
    'a type no vGPU holds': (
        {'nvidia-223': None, 'nvidia-472': None},
        dict(IDLE, **{
            nv.T4_BUSY: {}, nv.A100_PF: {},
            nv.T4_FRESH: {nv.T4_FRESH + '_nvidia-223': ('VGPU', 8)}})),
    # The busy T4's type is enabled on the other T4 alone: not adopted.
    'one T4 only': (
        {'nvidia-222': [nv.T4_FRESH]},
        dict(IDLE, **{
            nv.T4_BUSY: {},
            nv.T4_FRESH: {nv.T4_FRESH + '_nvidia-222': ('VGPU', 16)}})),
    'two free VFs': (
        {'nvidia-471': [VFS[2], VFS[5]]},
        dict(IDLE, **{
            nv.A100_PF: {nv.A100_PF + '_nvidia-471': ('VGPU', 2)}})),
    'the A100 by its PF': (
        {'nvidia-474': [nv.A100_PF], 'nvidia-471': [nv.A100_PF]},
        dict(IDLE, **{
            nv.A100_PF: {nv.A100_PF + '_nvidia-471': ('VGPU', 10)}})),
}


# The PGPU trait of each GPU, and what a vGPU type's name adds to it.
GPU_TRAITS = {nv.T4_BUSY: 'CUSTOM_NVIDIA_1EB8',
              nv.T4_FRESH: 'CUSTOM_NVIDIA_1EB8',
              nv.A10_VFIO: 'CUSTOM_NVIDIA_2236',
              nv.A100_PF: 'CUSTOM_NVIDIA_20F1',
              nv.RTX: 'CUSTOM_NVIDIA_1E30'}
TYPE_TRAITS = {spec[0]: '_' + spec[1].replace(' ', '_').replace('-', '_')
               for spec in nv.T4_TYPES + nv.A100_TYPES}


@pytest.mark.parametrize('config', sorted(CONFIGS))
def test_inventory_of_each_gpu(vgpu, config):
    types, expected = CONFIGS[config]
    vgpu(types)
    devices = _discover()
    assert _inventory(devices) == expected
    for address, dev in devices.items():
        services = []
        for dep in dev.deployables:
            if dep.resource_class == 'PGPU':
                assert dep.traits == ['OWNER_CYBORG', GPU_TRAITS[address]]
                assert ([h.attach_type for h in dep.attach_handles],
                        _parents(dep)) == (['PCI'], [address])
                services.append('gpu.compute')
                continue
            vgpu_type = dep.name.rsplit('_', 1)[1]
            assert dep.traits == ['OWNER_CYBORG', GPU_TRAITS[address] +
                                  TYPE_TRAITS[vgpu_type].upper()]
            assert {(h.attach_type, h.attach_info['asked_type'])
                    for h in dep.attach_handles} == {('MDEV', vgpu_type)}
            services.append('vgpu:' + vgpu_type)
        assert dev.services == sorted(services)
        assert dev.warnings == []


def test_vgpu_deployables_in_full(vgpu):
    vgpu({'nvidia-222': None, 'nvidia-471': None})
    devices = _discover()
    t4 = devices[nv.T4_BUSY]
    (dep,) = t4.deployables
    assert t4.services == ['vgpu:nvidia-222']
    assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_1EB8_GRID_T4_1B']
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('MDEV', {'domain': '0000', 'bus': '3b', 'device': '00',
                  'function': '0', 'asked_type': 'nvidia-222',
                  'vgpu_mark': 'nvidia-222_%d' % n}) for n in range(16)]
    a100 = devices[nv.A100_PF]
    (dep,) = a100.deployables
    assert a100.services == ['vgpu:nvidia-471']
    assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_20F1_GRID_A100_4C']
    # One handle per VF: the two holding a vGPU, then free ones in virtfn
    # order, up to max_instance.
    assert _parents(dep) == VFS[:10]
    assert {(h.attach_type, h.attach_info['asked_type'],
             h.attach_info['vgpu_mark']) for h in dep.attach_handles} == {
        ('MDEV', 'nvidia-471', 'nvidia-471_0')}


def test_vfs_holding_vgpus_come_first(tmp_path, vgpu):
    b = nv.Builder(str(tmp_path))
    nv.a100(b, nv.A100_PF, 120, vgpus={12: 'nvidia-471', 15: 'nvidia-471'})
    vgpu({'nvidia-471': None})
    (dep,) = _discover(str(tmp_path))[nv.A100_PF].deployables
    assert _parents(dep) == VFS[:8] + [VFS[12], VFS[15]]


def test_the_cap_counts_vgpus_outside_device_addresses(tmp_path, vgpu):
    b = nv.Builder(str(tmp_path))
    nv.a100(b, nv.A100_PF, 120,
            vgpus={index: 'nvidia-471' for index in range(9)})
    vgpu({'nvidia-471': VFS[9:]})
    (dep,) = _discover(str(tmp_path))[nv.A100_PF].deployables
    # 9 of 10 A100-4C exist on VFs not selected: room for one more.
    assert _parents(dep) == [VFS[9]]


def test_a_full_a100_offers_its_vgpus_only(tmp_path, vgpu):
    b = nv.Builder(str(tmp_path))
    nv.a100(b, nv.A100_PF, 120,
            vgpus={index: 'nvidia-471' for index in range(3, 13)})
    vgpu({'nvidia-471': None, 'nvidia-472': None})
    a100 = _discover(str(tmp_path))[nv.A100_PF]
    (dep,) = a100.deployables
    assert _parents(dep) == VFS[3:13]


def test_a_fresh_a100_offers_every_type(tmp_path, vgpu):
    b = nv.Builder(str(tmp_path))
    nv.a100(b, nv.A100_PF, 120)
    vgpu({vgpu_type: None for vgpu_type in ALL_TYPES})
    # NOTE(tests): until one vGPU exists each type is offered; the first
    # one created makes the others read 0 at the next discovery.
    assert _inventory(_discover(str(tmp_path))) == {nv.A100_PF: {
        nv.A100_PF + '_nvidia-471': ('VGPU', 10),
        nv.A100_PF + '_nvidia-472': ('VGPU', 8),
        nv.A100_PF + '_nvidia-474': ('VGPU', 4)}}


def test_a_vf_holding_a_vgpu_never_counts_for_another_type(tree, vgpu):
    # A kernel that says otherwise is not believed: one vGPU per VF.
    for index in (0, 5):
        _write(_type_file(tree, VFS[index], 'nvidia-472',
                          'available_instances'), '1\n')
    vgpu({'nvidia-472': None})
    (dep,) = _discover(tree)[nv.A100_PF].deployables
    assert _parents(dep) == [VFS[5]]


def test_a_pf_type_never_exceeds_max_instance(tree, vgpu):
    _write(_type_file(tree, nv.T4_FRESH, 'nvidia-223',
                      'available_instances'), '40\n')
    vgpu({'nvidia-223': None})
    t4 = _discover(tree)[nv.T4_FRESH]
    assert [d.num_accelerators for d in t4.deployables] == [8]
    assert t4.warnings == []


@pytest.mark.parametrize('content, total, warning', [
    # No max_instance: the kernel's counts are exact on a PF.
    ('num_heads=4, framebuffer=2048M', 40, None),
    ('', 40, None),
    (b'\xff\xfe max_instance=8', 40, 'unreadable description: '
     'available_instances and created vGPUs count'),
    ('num_heads=4, max_instance=lots', 40, "max_instance 'lots' does not "
     "parse: available_instances and created vGPUs count"),
    ('max_instance=6,num_heads=4', 6, None),
])
def test_description_of_a_pf_type(tree, vgpu, content, total, warning):
    _write(_type_file(tree, nv.T4_FRESH, 'nvidia-223',
                      'available_instances'), '40\n')
    _write(_type_file(tree, nv.T4_FRESH, 'nvidia-223', 'description'),
           content)
    vgpu({'nvidia-223': None})
    t4 = _discover(tree)[nv.T4_FRESH]
    assert [d.num_accelerators for d in t4.deployables] == [total]
    path = 'bus/pci/devices/%s/mdev_supported_types/nvidia-223/description'
    assert t4.warnings == ([] if warning is None else [
        '%s: %s' % (path % nv.T4_FRESH, warning)])


def test_a_vf_type_without_max_instance_counts_its_vfs(tree, vgpu):
    for vf in VFS:
        os.remove(_type_file(tree, vf, 'nvidia-471', 'description'))
    vgpu({'nvidia-471': None})
    a100 = _discover(tree)[nv.A100_PF]
    (dep,) = a100.deployables
    assert dep.num_accelerators == 16
    assert a100.warnings == [
        'bus/pci/devices/%s/mdev_supported_types/nvidia-471/description: '
        'no description, so no max_instance: each VF offering it counts'
        % vf for vf in VFS]


def test_one_damaged_vf_description_leaves_the_cap(tree, vgpu):
    _write(_type_file(tree, VFS[3], 'nvidia-471', 'description'),
           'num_heads=1\n')
    vgpu({'nvidia-471': None})
    a100 = _discover(tree)[nv.A100_PF]
    assert [d.num_accelerators for d in a100.deployables] == [10]
    assert a100.warnings == [
        'bus/pci/devices/%s/mdev_supported_types/nvidia-471/description: '
        'description names no max_instance: each VF offering it counts'
        % VFS[3]]


def test_free_vfs_as_pgpus_when_not_filtered(override):
    override('filter_sriov_vfs', False, group='gpu_devices')
    a100 = _discover()[nv.A100_PF]
    # The first two VFs hold vGPUs: busy.
    assert sorted(dep.name for dep in a100.deployables) == [
        '%s_%s' % (HOST, vf) for vf in VFS[2:]]


def test_binding_a_vf_handle_creates_the_mdev_on_that_vf(tree, vgpu,
                                                          override):
    override('sysfs_root', tree, group='agent')
    vgpu({'nvidia-471': None})
    (dep,) = _discover(tree)[nv.A100_PF].deployables
    handle = dep.attach_handles[-1]
    uuid = '0d4c6a52-7a3b-4f0e-9c1d-2b3a4c5d6e7f'
    with pci_hosts.privsep_in_process():
        nvidia_gpu.NvidiaGpuDriver().prepare_handle(
            handle.attach_type, handle.attach_info, uuid)
    with open(_type_file(tree, VFS[9], 'nvidia-471', 'create')) as made:
        assert made.read().strip() == uuid


def _nvidia_pass(root):
    # NOTE(tests): this driver alone, called directly: a raise fails the
    # test rather than being counted as a failed driver.
    devices = nvidia_gpu.NvidiaGpuDriver().discover(
        base.DiscoveryContext('fuzz', str(root)))
    return report.HostReport('fuzz', devices), []


def test_damage_never_breaks_discovery_of_nvidia_host(override, tmp_path,
                                                      monkeypatch):
    monkeypatch.setattr(damage_fuzz, 'discover', _nvidia_pass)
    monkeypatch.setattr(damage_fuzz, 'hosts', lambda: [nv.NAME])
    assert damage_fuzz.run(override, tmp_path, 20261126, 12) >= 12

