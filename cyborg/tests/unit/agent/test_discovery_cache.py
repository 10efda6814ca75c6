"""The discovery cache: what it reuses, and every change that misses it."""

import json
import os
import time

import pytest

from cyborg import exception
from cyborg.agent import driver_ops
from cyborg.agent import fingerprint
from cyborg.agent import resource_tracker
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.drivers import sysfs
from cyborg.tests import sysfs_builder

PF = '0000:3d:00.0'
VFS = ['0000:3d:00.4', '0000:3d:00.5']
SPARE_VF = '0000:3d:00.6'
GPU = '0000:af:00.0'
VGPU = 'i915-GVTg_V5_4'
RULES = ('sysfs', 'fixture')


class TreeDriver(base.AcceleratorDriver):
    """Reports each Intel PF with its VFs, its kernel driver, its mdev
    types; unhealthy when its ``qat/state`` is not 'up'."""

    name = 'tree'

    def __init__(self, vendor='8086'):
        self.vendor = vendor
        self.passes = 0

    def discover(self, ctx):
        self.passes += 1
        return [self._device(ctx, fn) for fn in ctx.sysfs.pci_functions
                if fn.vendor_id == self.vendor and not fn.is_vf]

    def _device(self, ctx, fn):
        handles = [report.AttachHandle('PCI', vf.as_dict())
                   for vf in fn.virtfns]
        deployables = [report.Deployable(
            name='%s_%s' % (ctx.host, fn.address),
            num_accelerators=max(1, len(handles)),
            resource_class='CUSTOM_TREE', attach_handles=handles,
            driver_name=self.name)]
        for mdev in fn.mdev_types().values():
            deployables.append(report.Deployable(
                name='%s_%s_%s' % (ctx.host, fn.address, mdev.type_id),
                num_accelerators=mdev.available_instances + mdev.created,
                resource_class='VGPU', driver_name=self.name))
        return report.Device(
            type='QAT', vendor='0x' + fn.vendor_id, model=fn.device_id,
            controlpath=report.ControlPath('PCI', fn.address.as_dict()),
            std_board_info={'kernel_driver': fn.driver},
            deployables=deployables, driver_name=self.name)

    def health(self, device):
        info = device.controlpath.cpid_info
        state = sysfs.Sysfs().read(
            'bus', 'pci', 'devices', '%(domain)s:%(bus)s:%(device)s.'
            '%(function)s' % info, 'qat', 'state')
        return base.HEALTHY if state in (None, 'up') else \
            base.Health(False, state)


def _age(root, seconds=60):
    """Set every timestamp of the tree back, as if written long ago."""
    past = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.utime(os.path.join(dirpath, name), (past, past),
                     follow_symlinks=False)
    os.utime(root, (past, past))


@pytest.fixture
def tree(tmp_path, override):
    """An aged tree: a PF with two VFs, a GPU with a vGPU type, a NIC."""
    root = str(tmp_path / 'sys')
    b = sysfs_builder.SysfsBuilder(root)
    b.pci(PF, '0x8086', '0x37c8', '0x0b4000', driver='c6xx', totalvfs=16,
          iommu_group=1)
    b.vfs(PF, VFS, '0x8086', '0x37c9', '0x0b4000', driver='c6xxvf',
          first_iommu_group=2)
    b.qat(PF, 'sym;asym')
    b.pci(SPARE_VF, '0x8086', '0x37c9', '0x0b4000', iommu_group=9)
    b.pci(GPU, '0x8086', '0x3e92', '0x030000', driver='i915',
          iommu_group=10)
    b.mdev_type(GPU, VGPU, 'GVTg_V5_4', 4)
    b.pci('0000:18:00.0', '0x15b3', '0x1017', '0x020000', driver='mlx5')
    override('sysfs_root', root, group='agent')
    _age(root)
    yield b
    fingerprint.treat_as_kernfs(root, False)


def _tracker(tree, rules='fixture', *drivers):
    fingerprint.treat_as_kernfs(tree.root, rules == 'sysfs')
    tracker = resource_tracker.ResourceTracker('node1', [])
    for index, driver in enumerate(drivers or (TreeDriver(),)):
        tracker.drivers['tree%d' % index] = driver
    return tracker


def _discover(tracker):
    host_report, failed = tracker.discover()
    assert failed == []
    return host_report


def _same(one, other):
    return json.dumps(one.to_primitive(), sort_keys=True) == \
        json.dumps(other.to_primitive(), sort_keys=True)


def _device(host_report, address):
    for device in host_report.devices:
        if str(sysfs.PciAddress(**{
                'slot' if k == 'device' else k: v
                for k, v in device.controlpath.cpid_info.items()})) == \
                address:
            return device
    return None


def _replace_link(target, link):
    """Swap a symlink for a new one, so it is a new inode as on kernfs."""
    tmp = link + '.new'
    os.symlink(os.path.relpath(target, os.path.dirname(link)), tmp)
    os.replace(tmp, link)


@pytest.mark.parametrize('rules', RULES)
def test_an_unchanged_pass_comes_from_the_cache(tree, rules):
    driver = TreeDriver()
    tracker = _tracker(tree, rules, driver)
    first = _discover(tracker)
    assert not tracker.last_pass_cached
    again = _discover(tracker)
    assert tracker.last_pass_cached and driver.passes == 1
    assert _same(first, again)
    # NOTE(tests): copies each pass, so a caller changing one changes
    # neither the cache nor the next pass.
    for host_report in (first, again):
        device = _device(host_report, PF)
        device.fault = 'changed'
        device.std_board_info['kernel_driver'] = 'changed'
        device.deployables[0].traits.append('CUSTOM_CHANGED')
        device.deployables[0].attach_handles[0].attach_info['bus'] = 'ff'
        device.deployables.append(device.deployables[0])
    assert _same(_discover(tracker), _discover(_tracker(tree, rules)))


@pytest.mark.parametrize('rules', RULES)
def test_a_new_vf_misses(tree, rules):
    driver = TreeDriver()
    tracker = _tracker(tree, rules, driver)
    _discover(tracker)
    # The function appears first, then the PF's virtfn link to it.
    os.symlink(os.path.relpath(tree.device_dir(PF),
                               tree.device_dir(SPARE_VF)),
               os.path.join(tree.device_dir(SPARE_VF), 'physfn'))
    _discover(tracker)
    assert not tracker.last_pass_cached and driver.passes == 2
    _discover(tracker)
    assert tracker.last_pass_cached
    os.symlink(os.path.relpath(tree.device_dir(SPARE_VF),
                               tree.device_dir(PF)),
               os.path.join(tree.device_dir(PF), 'virtfn2'))
    found = _discover(tracker)
    assert not tracker.last_pass_cached and driver.passes == 3
    handles = _device(found, PF).deployables[0].attach_handles
    assert len(handles) == 3


@pytest.mark.parametrize('rules', RULES)
def test_a_new_pci_function_misses(tree, rules):
    tracker = _tracker(tree, rules)
    _discover(tracker)
    tree.pci('0000:5e:00.0', '0x8086', '0x37c8', '0x0b4000')
    found = _discover(tracker)
    assert not tracker.last_pass_cached
    assert _device(found, '0000:5e:00.0') is not None


@pytest.mark.parametrize('rules', RULES)
def test_a_created_mdev_misses(tree, rules):
    tracker = _tracker(tree, rules)
    _discover(tracker)
    # NOTE(tests): as the kernel does: a directory below the parent, a
    # link in the type's devices/; the count moves with them.
    mdev = os.path.join(tree.device_dir(GPU),
                        'c0ffee00-0000-4000-8000-000000000001')
    os.mkdir(mdev)
    types = os.path.join(tree.device_dir(GPU), 'mdev_supported_types', VGPU)
    os.symlink(os.path.relpath(mdev, os.path.join(types, 'devices')),
               os.path.join(types, 'devices', os.path.basename(mdev)))
    _discover(tracker)
    assert not tracker.last_pass_cached


@pytest.mark.parametrize('rules', RULES)
def test_a_watched_value_changed_in_place_misses(tree, rules):
    tracker = _tracker(tree, rules)
    _discover(tracker)
    path = os.path.join(tree.device_dir(GPU), 'mdev_supported_types', VGPU,
                        'available_instances')
    stat = os.stat(path)
    with open(path, 'w') as out:
        out.write('2\n')
    # NOTE(tests): on sysfs neither mtime nor size tells a new value.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    found = _discover(tracker)
    assert not tracker.last_pass_cached
    vgpu, = [dep for dep in _device(found, GPU).deployables
             if dep.resource_class == 'VGPU']
    assert vgpu.num_accelerators == 2


@pytest.mark.parametrize('rules', RULES)
def test_rebinding_a_driver_misses(tree, rules):
    tracker = _tracker(tree, rules)
    _discover(tracker)
    vfio = tree.path('bus', 'pci', 'drivers', 'vfio-pci')
    os.makedirs(vfio)
    _replace_link(vfio, os.path.join(tree.device_dir(PF), 'driver'))
    found = _discover(tracker)
    assert not tracker.last_pass_cached
    assert _device(found, PF).std_board_info['kernel_driver'] == 'vfio-pci'


def test_enabling_and_disabling_a_driver_misses(tree):
    tracker = _tracker(tree)
    _discover(tracker)
    tracker.enable('nic', TreeDriver(vendor='15b3'))
    found = _discover(tracker)
    assert not tracker.last_pass_cached
    assert _device(found, '0000:18:00.0') is not None
    _discover(tracker)
    assert tracker.last_pass_cached
    tracker.disable('nic')
    found = _discover(tracker)
    assert not tracker.last_pass_cached
    assert _device(found, '0000:18:00.0') is None


def test_a_new_driver_object_or_a_patched_discover_misses(tree):
    tracker = _tracker(tree)
    _discover(tracker)
    # NOTE(tests): what driver_ops.update does, and what tests do.
    tracker.drivers['tree0'] = TreeDriver()
    _discover(tracker)
    assert not tracker.last_pass_cached
    driver = tracker.drivers['tree0']
    driver.discover = lambda ctx: []
    found = _discover(tracker)
    assert not tracker.last_pass_cached and found.devices == []


def test_an_option_change_misses(tree, override):
    tracker = _tracker(tree)
    _discover(tracker)
    override('enabled_vgpu_types', [VGPU], group='gpu_devices')
    _discover(tracker)
    assert not tracker.last_pass_cached
    _discover(tracker)
    assert tracker.last_pass_cached


@pytest.mark.parametrize('rules', RULES)
def test_health_faults_show_on_a_cached_pass(tree, rules):
    tracker = _tracker(tree, rules)
    assert _device(_discover(tracker), PF).fault is None
    with open(os.path.join(tree.device_dir(PF), 'qat', 'state'), 'w') as f:
        f.write('down\n')
    found = _discover(tracker)
    assert tracker.last_pass_cached
    assert _device(found, PF).fault == 'down'


def test_a_damaged_file_of_a_fixture_misses(tree):
    tracker = _tracker(tree)
    _discover(tracker)
    with open(os.path.join(tree.device_dir(PF), 'vendor'), 'w') as out:
        out.write('0xzzzz\n')
    found = _discover(tracker)
    assert not tracker.last_pass_cached
    assert _device(found, PF) is None


def test_sysfs_rules_read_only_the_watched_values(tree):
    # NOTE(tests): on sysfs a file's mtime and size say nothing, so a
    # value no driver watches is not compared: identity files never
    # change while their function exists.
    tracker = _tracker(tree, 'sysfs')
    _discover(tracker)
    with open(os.path.join(tree.device_dir(PF), 'numa_node'), 'w') as out:
        out.write('1\n')
    _discover(tracker)
    assert tracker.last_pass_cached


def test_a_tree_written_just_now_is_not_trusted(tree):
    tracker = _tracker(tree)
    with open(os.path.join(tree.device_dir(PF), 'revision'), 'w') as out:
        out.write('0x05\n')
    _discover(tracker)
    _discover(tracker)
    assert not tracker.last_pass_cached
    _age(tree.root)
    _discover(tracker)
    _discover(tracker)
    assert tracker.last_pass_cached


def test_a_result_older_than_the_max_age_is_read_again(tree, override,
                                                       monkeypatch):
    tracker = _tracker(tree)
    _discover(tracker)
    now = time.monotonic()
    monkeypatch.setattr(time, 'monotonic', lambda: now + 601)
    _discover(tracker)
    assert not tracker.last_pass_cached
    override('discovery_cache_max_age', 0, group='agent')
    _discover(tracker)
    _discover(tracker)
    assert not tracker.last_pass_cached


def test_a_pass_with_a_failed_driver_is_not_kept(tree):
    driver = TreeDriver()
    tracker = _tracker(tree, 'fixture', driver)
    real = driver.discover
    calls = []

    def flaky(ctx):
        calls.append(1)
        if len(calls) == 1:
            raise OSError('sysfs went away')
        return real(ctx)

    driver.discover = flaky
    assert tracker.discover()[1] == ['tree']
    _discover(tracker)
    assert not tracker.last_pass_cached
    _discover(tracker)
    assert tracker.last_pass_cached


def test_invalidate_makes_the_next_pass_full(tree):
    tracker = _tracker(tree)
    _discover(tracker)
    tracker.invalidate()
    _discover(tracker)
    assert not tracker.last_pass_cached


@pytest.mark.parametrize('fails', [False, True])
def test_a_driver_update_invalidates(tree, monkeypatch, fails):
    tracker = resource_tracker.ResourceTracker('node1', ['fake_driver'])
    found = _discover(tracker).devices
    _discover(tracker)
    assert tracker.last_pass_cached
    if fails:
        def broken(self, devices, image_path=None):
            raise RuntimeError('flash failed halfway')

        monkeypatch.setattr(fake.FakeDriver, 'update', broken)
        with pytest.raises(exception.DriverError):
            driver_ops.update(tracker, 'node1', 'fake_driver', found)
    else:
        driver_ops.update(tracker, 'node1', 'fake_driver', found)
    _discover(tracker)
    assert not tracker.last_pass_cached


def test_a_driver_operation_of_the_agent_invalidates(stack, tree):
    agent = stack()
    agent.report()
    agent.report()
    assert agent.tracker.last_pass_cached
    agent._run('fake', 'Nothing', lambda: None)
    agent.report()
    assert not agent.tracker.last_pass_cached


@pytest.mark.parametrize('rules', RULES)
def test_a_tree_without_pci_functions_is_cached(tmp_path, override, rules):
    root = tmp_path / 'empty'
    root.mkdir()
    override('sysfs_root', str(root), group='agent')
    fingerprint.treat_as_kernfs(str(root), rules == 'sysfs')
    try:
        tracker = resource_tracker.ResourceTracker('node1', ['fake_driver'])
        first = _discover(tracker)
        assert _same(first, _discover(tracker))
        assert tracker.last_pass_cached
        (root / 'bus' / 'pci' / 'devices').mkdir(parents=True)
        _discover(tracker)
        assert not tracker.last_pass_cached
    finally:
        fingerprint.treat_as_kernfs(str(root), False)


def test_sysfs_is_told_from_a_fixture(tmp_path):
    assert not fingerprint.is_kernfs(str(tmp_path))
    if os.path.isdir('/sys/bus/pci/devices'):
        assert fingerprint.is_kernfs('/sys/bus/pci')
    fingerprint.treat_as_kernfs(str(tmp_path))
    try:
        assert fingerprint.is_kernfs(str(tmp_path))
    finally:
        fingerprint.treat_as_kernfs(str(tmp_path), False)


@pytest.mark.skipif(not fingerprint.is_kernfs('/sys'),
                    reason='/sys is no sysfs mount here')
def test_this_hosts_sysfs_fingerprints_the_same_twice():
    watched = base.AcceleratorDriver.watched_files + ('qat/cfg_services',)
    first = fingerprint.Fingerprint('/sys', watched)
    assert not first.racy
    assert fingerprint.Fingerprint('/sys', watched) == first
