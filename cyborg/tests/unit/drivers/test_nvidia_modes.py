"""Partition modes of the NVIDIA GPU driver on the simulated nvidia-host."""

from oslo_config import cfg
import pytest

from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import base
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import report
from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF
HOST = 'compute-1'
T4_MODES = ['passthrough'] + ['vgpu:' + spec[0] for spec in nv.T4_TYPES]
A100_MODES = ['passthrough'] + ['sriov-vgpu:' + spec[0]
                                for spec in nv.A100_TYPES]


def discover(modes=None, root=None):
    ctx = base.DiscoveryContext(
        HOST, sysfs_root=str(root or pci_hosts.committed(nv.NAME)),
        modes={'nvidia_gpu': modes} if modes else None)
    devices = nvidia_gpu.NvidiaGpuDriver().discover(ctx)
    pci_hosts.check_report(HOST, devices)
    return pci_hosts.by_address(devices)


def offered(device):
    return {dep.name[len(HOST) + 1:]: (dep.resource_class,
                                       dep.num_accelerators)
            for dep in device.deployables}


def test_modes_the_hardware_offers():
    devices = discover()
    assert devices[nv.T4_FRESH].modes == T4_MODES
    # NOTE(tests): a T4 holding a vGPU offers the same modes; only the
    # switch to another is refused while the vGPU exists.
    assert devices[nv.T4_BUSY].modes == T4_MODES
    assert devices[nv.A100_PF].modes == A100_MODES
    assert devices[nv.A10_VFIO].modes == ['passthrough']
    assert devices[nv.RTX].modes == ['passthrough']


def test_mode_derived_from_the_options(override):
    devices = discover()
    # Offered whole: passthrough; holding vGPUs of one type no option
    # enables: that type's mode, on the PF or on the VFs.
    assert {a: d.mode for a, d in devices.items()} == {
        nv.T4_BUSY: 'vgpu:nvidia-222', nv.T4_FRESH: 'passthrough',
        nv.A10_VFIO: 'passthrough', nv.A100_PF: 'sriov-vgpu:nvidia-471',
        nv.RTX: 'passthrough'}
    override('enabled_vgpu_types', ['nvidia-222', 'nvidia-223', 'nvidia-471'],
             group='gpu_devices')
    gpu_conf.register_dynamic_opts(CONF)
    devices = discover()
    # Several types at once: no one mode.
    assert devices[nv.T4_FRESH].mode is None
    assert devices[nv.T4_BUSY].mode == 'vgpu:nvidia-222'
    assert devices[nv.A100_PF].mode == 'sriov-vgpu:nvidia-471'
    assert devices[nv.A10_VFIO].mode == 'passthrough'


@pytest.mark.parametrize('address, mode, expected', [
    (nv.T4_FRESH, 'vgpu:nvidia-222', {nv.T4_FRESH + '_nvidia-222':
                                      ('VGPU', 16)}),
    (nv.T4_FRESH, 'vgpu:nvidia-230', {nv.T4_FRESH + '_nvidia-230':
                                      ('VGPU', 4)}),
    (nv.T4_FRESH, 'passthrough', {nv.T4_FRESH: ('PGPU', 1)}),
    # max_instance caps the VFs: 10 of 16.
    (nv.A100_PF, 'sriov-vgpu:nvidia-471', {nv.A100_PF + '_nvidia-471':
                                           ('VGPU', 10)}),
    # Whole, although its VFs hold vGPUs made by hand: not offered.
    (nv.A100_PF, 'passthrough', {}),
    (nv.A10_VFIO, 'passthrough', {nv.A10_VFIO: ('PGPU', 1)}),
])
def test_a_chosen_mode_overrides_the_options(override, address, mode,
                                             expected):
    # Options that would offer something else on every GPU.
    override('enabled_vgpu_types', ['nvidia-223', 'nvidia-474'],
             group='gpu_devices')
    gpu_conf.register_dynamic_opts(CONF)
    device = discover({address: mode})[address]
    assert (offered(device), device.mode) == (expected, mode)
    services = sorted('gpu.compute' if dep.resource_class == 'PGPU'
                      else 'vgpu:' + dep.name.rsplit('_', 1)[1]
                      for dep in device.deployables)
    assert device.services == services
    assert device.warnings == []


def test_the_chosen_type_is_shaped_as_the_options_shape_it(override):
    chosen = discover({nv.A100_PF: 'sriov-vgpu:nvidia-471',
                        nv.T4_FRESH: 'vgpu:nvidia-222'})
    override('enabled_vgpu_types', ['nvidia-222', 'nvidia-471'],
             group='gpu_devices')
    gpu_conf.register_dynamic_opts(CONF)
    configured = discover()
    for address in (nv.A100_PF, nv.T4_FRESH):
        assert chosen[address].deployables == \
            configured[address].deployables


def test_other_gpus_keep_their_options(override):
    override('enabled_vgpu_types', ['nvidia-223'], group='gpu_devices')
    gpu_conf.register_dynamic_opts(CONF)
    devices = discover({nv.T4_FRESH: 'passthrough'})
    assert offered(devices[nv.T4_FRESH]) == {nv.T4_FRESH: ('PGPU', 1)}
    # The busy T4 holds a vGPU of another type: nvidia-223 reads 0.
    assert offered(devices[nv.T4_BUSY]) == {}
    assert offered(devices[nv.RTX]) == {nv.RTX: ('PGPU', 1)}


def test_a_mode_the_gpu_does_not_offer_is_ignored(caplog):
    devices = discover({nv.A10_VFIO: 'vgpu:nvidia-222',
                         nv.T4_FRESH: 'sriov-vgpu:nvidia-222'})
    assert devices[nv.A10_VFIO].mode == 'passthrough'
    assert offered(devices[nv.T4_FRESH]) == {nv.T4_FRESH: ('PGPU', 1)}
    assert 'does not offer the mode sriov-vgpu:nvidia-222' in caplog.text


def test_modes_of_another_driver_are_not_read():
    ctx = base.DiscoveryContext(
        HOST, sysfs_root=str(pci_hosts.committed(nv.NAME)),
        modes={'pci': {nv.T4_FRESH: 'vgpu:nvidia-222'}})
    devices = pci_hosts.by_address(nvidia_gpu.NvidiaGpuDriver().discover(
        ctx))
    assert devices[nv.T4_FRESH].mode == 'passthrough'


def test_in_use_names_the_vgpus_of_the_gpu_and_its_vfs(override):
    override('sysfs_root', pci_hosts.committed(nv.NAME), group='agent')
    driver = nvidia_gpu.NvidiaGpuDriver()
    devices = discover()
    assert driver.in_use(devices[nv.T4_FRESH]) == []
    assert driver.in_use(devices[nv.A10_VFIO]) == []
    assert driver.in_use(devices[nv.T4_BUSY]) == [nv.mdev_uuid(0, 0)]
    assert len(driver.in_use(devices[nv.A100_PF])) == 2


def test_modes_go_over_rpc_and_back():
    devices = list(discover({nv.T4_FRESH: 'vgpu:nvidia-223'}).values())
    host_report = report.HostReport(host=HOST, devices=devices)
    back = report.HostReport.from_primitive(host_report.to_primitive())
    assert back == host_report
    t4 = pci_hosts.by_address(back.devices)[nv.T4_FRESH]
    assert (t4.modes, t4.mode) == (T4_MODES, 'vgpu:nvidia-223')
    # From an agent older than modes: none.
    primitive = host_report.to_primitive()
    for dev in primitive['devices']:
        del dev['modes'], dev['mode']
    old = report.HostReport.from_primitive(primitive)
    assert {(tuple(d.modes), d.mode) for d in old.devices} == {((), None)}
