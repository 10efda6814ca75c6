"""What a GPU holding vGPUs offers, and why a GPU that offers nothing does."""

import os

from oslo_config import cfg
import pytest

from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.unit.drivers import test_nvidia_modes as modes_tests

CONF = cfg.CONF
HOST = 'compute-1'
SET_MODE = 'openstack accelerator device mode set'


_offered = modes_tests.offered


def _discover(root=None, modes=None):
    return modes_tests.discover(modes=modes, root=root)


def _available(root, address, type_id, value):
    path = os.path.join(root, 'bus', 'pci', 'devices', address,
                        'mdev_supported_types', type_id,
                        'available_instances')
    with open(path, 'w') as out:
        out.write('%d\n' % value)


def test_a_gpu_holding_vgpus_of_one_type_is_in_that_types_mode():
    devices = _discover()
    t4 = devices[nv.T4_BUSY]
    # One T4-1B exists and 15 can still be made: the existing one counts.
    assert (_offered(t4), t4.mode, t4.services, t4.offer_reason) == (
        {nv.T4_BUSY + '_nvidia-222': ('VGPU', 16)}, 'vgpu:nvidia-222',
        ['vgpu:nvidia-222'], None)
    assert [h.attach_info['vgpu_mark']
            for h in t4.deployables[0].attach_handles] == [
        'nvidia-222_%d' % n for n in range(16)]
    a100 = devices[nv.A100_PF]
    # On the VFs: two hold an A100-4C, max_instance stops at 10.
    assert (_offered(a100), a100.mode, a100.offer_reason) == (
        {nv.A100_PF + '_nvidia-471': ('VGPU', 10)},
        'sriov-vgpu:nvidia-471', None)
    # The GPUs holding nothing are offered whole, as before.
    assert _offered(devices[nv.T4_FRESH]) == {nv.T4_FRESH: ('PGPU', 1)}


def test_vgpus_of_a_type_not_enabled_leave_no_room_for_those_enabled(vgpu):
    vgpu({'nvidia-223': None, 'nvidia-472': None})
    devices = _discover()
    t4, a100 = devices[nv.T4_BUSY], devices[nv.A100_PF]
    assert (t4.deployables, t4.mode) == ([], None)
    assert t4.offer_reason == (
        'it holds vGPUs of nvidia-222, which [gpu_devices] '
        'enabled_vgpu_types does not enable, and they leave no room for the '
        'enabled nvidia-223: enable nvidia-222 as well, or remove the vGPUs')
    assert a100.deployables == []
    assert a100.offer_reason.startswith(
        'it holds vGPUs of nvidia-471, which [gpu_devices] '
        'enabled_vgpu_types does not enable')


def test_device_addresses_leaving_a_holder_out_are_not_overridden(vgpu):
    vgpu({'nvidia-222': [nv.T4_FRESH]})
    t4 = _discover()[nv.T4_BUSY]
    assert t4.deployables == []
    assert t4.offer_reason == (
        'it holds vGPUs of nvidia-222, but [vgpu_nvidia-222] '
        'device_addresses does not select it: add %s there, or remove the '
        'vGPUs' % nv.T4_BUSY)


def test_vgpus_of_several_types_are_no_one_mode(tmp_path):
    # NOTE(tests): what NVIDIA's mixed-size mode allows on one GPU.
    nv.a100(nv.Builder(str(tmp_path)), nv.A100_PF, 120,
            vgpus={0: 'nvidia-471', 1: 'nvidia-472'})
    a100 = _discover(tmp_path)[nv.A100_PF]
    assert (a100.deployables, a100.mode) == ([], None)
    assert a100.offer_reason == (
        'it holds vGPUs of several types (nvidia-471, nvidia-472), which is '
        'no one mode: remove the vGPUs of all types but one, whose mode it '
        'then takes, or remove them all and choose its mode (%s)' % SET_MODE)


def test_enabled_types_without_room_block_passthrough(tmp_path, vgpu):
    root = pci_hosts.copy_host(nv.NAME, tmp_path / nv.NAME)
    _available(root, nv.T4_FRESH, 'nvidia-223', 0)
    vgpu({'nvidia-223': [nv.T4_FRESH]})
    t4 = _discover(root)[nv.T4_FRESH]
    assert t4.deployables == []
    assert t4.offer_reason.startswith(
        'the vGPU types enabled for it (nvidia-223) have no room on it')


@pytest.mark.parametrize('address, mode, reason', [
    (nv.A100_PF, 'passthrough',
     'it is in mode passthrough but holds vGPUs of nvidia-471 made outside '
     'that mode: remove them and it is offered whole, or choose the mode '
     'sriov-vgpu:nvidia-471 (%s)' % SET_MODE),
    (nv.T4_BUSY, 'vgpu:nvidia-223',
     'it is in mode vgpu:nvidia-223 but holds vGPUs of nvidia-222, which '
     'leave no room for its type: remove them, or choose the mode '
     'vgpu:nvidia-222 (%s)' % SET_MODE),
])
def test_a_chosen_mode_the_vgpus_keep_from_offering(address, mode, reason):
    device = _discover(modes={address: mode})[address]
    assert (device.deployables, device.mode) == ([], mode)
    assert device.offer_reason == reason


def test_a_chosen_type_without_room(tmp_path):
    root = pci_hosts.copy_host(nv.NAME, tmp_path / nv.NAME)
    _available(root, nv.T4_FRESH, 'nvidia-230', 0)
    t4 = _discover(root, {nv.T4_FRESH: 'vgpu:nvidia-230'})[nv.T4_FRESH]
    assert t4.deployables == []
    assert t4.offer_reason == (
        'it is in mode vgpu:nvidia-230 but its type has no room on it '
        '(available_instances reads 0 and it holds no vGPU): check the '
        'NVIDIA vGPU manager, or choose another mode (%s)' % SET_MODE)


def test_free_vfs_stay_pgpus_when_not_filtered(override):
    # NOTE(tests): with filter_sriov_vfs off the free VFs are offered
    # whole, as its help says; the GPU offers something, so it keeps that.
    override('filter_sriov_vfs', False, group='gpu_devices')
    a100 = _discover()[nv.A100_PF]
    assert {dep.resource_class for dep in a100.deployables} == {'PGPU'}
    assert (a100.mode, a100.offer_reason) == (None, None)
