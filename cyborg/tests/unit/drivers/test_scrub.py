"""Scrubbing a deployable between tenants, driver by driver, on host copies.

NOTE(tests): the committed trees hold no ``reset`` file. The kernel
(Documentation/ABI/testing/sysfs-bus-pci) creates one in a function's
directory only where it can reset that function alone, and ``reset_method``
next to it listing the enabled methods (space separated; empty once an
operator writes an empty string to it). ``_resettable`` adds them to a copy
as such a kernel would; the tests then read what the driver wrote.
"""

import errno
import os
import pathlib

from oslo_config import cfg
import pytest

from cyborg import exception
from cyborg.conf import generic as generic_conf
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import generic
from cyborg.drivers import generic_pci
from cyborg.drivers import huawei_ascend
from cyborg.drivers import intel_fpga
from cyborg.drivers import intel_qat
from cyborg.drivers import nvidia_gpu
from cyborg.drivers import pci
from cyborg.drivers import sysfs
from cyborg.drivers import xilinx_fpga
from cyborg.privsep import sysfs as privsep_sysfs
from cyborg.tests.fixtures import generic_host as gh
from cyborg.tests.fixtures import gpu_fpga_hosts as tools_fixture
from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts

CONF = cfg.CONF
NVME = '0000:5e:00.0'
QAT_PF = '0000:3d:00.0'
ASCEND = '0000:01:00.0'
ARRIA10 = '0000:5e:00.0'
ARRIA10_VFS = ('0000:5e:00.1', '0000:5e:00.2')
U250_MGMT, U250_USER = '0000:d8:00.0', '0000:d8:00.1'


def _dir(root, address):
    return os.path.join(root, 'bus', 'pci', 'devices', address)


def _resettable(root, address, methods='flr bus'):
    """Give ``address`` the files a kernel shows for a function it can
    reset: ``reset`` (write-only, reads nothing here) and
    ``reset_method``."""
    pathlib.Path(_dir(root, address), 'reset').touch()
    with open(os.path.join(_dir(root, address), 'reset_method'), 'w') as out:
        out.write(methods + '\n' if methods else '')


def _written(root, address):
    """What was written to the ``reset`` file of ``address`` ('' none)."""
    with open(os.path.join(_dir(root, address), 'reset')) as handle:
        return handle.read()


@pytest.fixture
def host(tmp_path, override):
    """host(name): a writable copy of a fixture host, as the agent's sysfs;
    privsep runs in the test process."""
    def _copy(name):
        root = pci_hosts.copy_host(name, tmp_path / name)
        override('sysfs_root', root, group='agent')
        return root
    with pci_hosts.privsep_in_process():
        yield _copy


def _found(driver, root):
    return pci_hosts.by_address(pci_hosts.discover(driver, root))


def _scrub(driver, device, index=0):
    return driver.scrub(device, device.deployables[index])


# --- The contract and its options. -----------------------------------------

class _Dep:
    """A deployable as the fake driver's scrub reads it: a name."""

    def __init__(self, name):
        self.name = name


class _Minimal(base.AcceleratorDriver):
    name = 'minimal'

    def discover(self, ctx):
        return []


def test_a_driver_without_a_scrub_group_never_scrubs():
    driver = _Minimal()
    assert driver.scrub_on_release() is False
    assert driver.scrub(None, None) is False


@pytest.mark.parametrize('cls, group', [
    (generic_pci.PciDriver, 'pci'),
    (generic.GenericDriver, 'generic_driver'),
    (nvidia_gpu.NvidiaGpuDriver, 'gpu_devices'),
    (intel_fpga.IntelFpgaDriver, 'fpga'),
    (xilinx_fpga.XilinxFpgaDriver, 'fpga'),
    (intel_qat.IntelQatDriver, 'intel_qat'),
    (huawei_ascend.HuaweiAscendDriver, 'huawei_ascend'),
])
def test_hardware_drivers_scrub_by_default_and_obey_their_group(
        override, cls, group):
    driver = cls()
    assert cls.scrub_group == group
    assert driver.scrub_on_release() is True
    override('scrub_on_release', False, group=group)
    assert driver.scrub_on_release() is False


def test_fake_driver_scrubs_only_when_asked(override):
    driver = fake.FakeDriver()
    assert CONF.fake_driver.scrub_failure == ''
    assert driver.scrub_on_release() is False
    override('scrub_on_release', True, group='fake_driver')
    assert driver.scrub_on_release() is True
    assert driver.scrub(None, _Dep('node1_FakeDevice')) is True


def test_fake_driver_scrub_failure(override):
    override('scrub_failure', 'card stuck in reset', group='fake_driver')
    with pytest.raises(exception.DriverError,
                       match='Driver fake failed: card stuck in reset'):
        fake.FakeDriver().scrub(None, _Dep('node1_FakeDevice'))


# --- The function-level reset (pci.reset_function). ------------------------

def _fn(root, address):
    return sysfs.Sysfs(root).pci_function(address)


def test_reset_writes_1_to_the_reset_file(host):
    root = host('pci-host')
    _resettable(root, NVME)
    assert pci.reset_function(_fn(root, NVME), 'pci') is True
    assert _written(root, NVME) == '1'


def test_no_reset_file_is_nothing_to_do(host):
    root = host('pci-host')
    assert pci.reset_function(_fn(root, NVME), 'pci') is False
    assert not os.path.exists(os.path.join(_dir(root, NVME), 'reset'))


def test_reset_turned_off_in_reset_method_is_not_tried(host):
    root = host('pci-host')
    _resettable(root, NVME, methods='')
    assert pci.reset_function(_fn(root, NVME), 'pci') is False
    assert _written(root, NVME) == ''


def test_a_failed_reset_is_a_driver_error(host, monkeypatch):
    root = host('pci-host')
    _resettable(root, NVME)

    def refused(_root, path, value):
        # NOTE(tests): what the kernel's reset_store returns when no
        # method could reset the function (pci_reset_function: -ENOTTY).
        raise OSError(errno.ENOTTY, os.strerror(errno.ENOTTY), path)

    monkeypatch.setattr(privsep_sysfs, 'write', refused)
    with pytest.raises(exception.DriverError,
                       match='cannot reset PCI function 0000:5e:00.0: '
                             'Inappropriate ioctl'):
        pci.reset_function(_fn(root, NVME), 'pci')


# --- Generic PCI, generic, Ascend, QAT: reset what the handles pass. -------

def _pci_driver(override):
    override('device_spec', ['{"address": "%s"}' % NVME], group='pci')
    return generic_pci.PciDriver()


def test_generic_pci_resets_the_function(host, override):
    root = host('pci-host')
    driver = _pci_driver(override)
    nvme = _found(driver, root)[NVME]
    assert _scrub(driver, nvme) is False
    _resettable(root, NVME)
    assert _scrub(driver, nvme) is True
    assert _written(root, NVME) == '1'


def test_a_function_gone_from_sysfs_fails_the_scrub(host, override):
    root = host('pci-host')
    driver = _pci_driver(override)
    nvme = _found(driver, root)[NVME]
    os.remove(_dir(root, NVME))
    with pytest.raises(exception.DriverError,
                       match='PCI function 0000:5e:00.0 is not in sysfs'):
        _scrub(driver, nvme)


def test_generic_driver_resets_each_vf_of_the_deployable(host, override):
    root = host(gh.NAME)
    for group, values in gh.AGENT_OPTIONS.items():
        if group.startswith(generic_conf.BACKEND_GROUP_PREFIX):
            generic_conf.register_backend_group(
                CONF, group[len(generic_conf.BACKEND_GROUP_PREFIX):])
        for name, value in values.items():
            override(name, value, group=group)
    driver = generic.GenericDriver()
    found = _found(driver, root)
    for vf in gh.CRYPTO_VFS:
        _resettable(root, vf)
    assert _scrub(driver, found[gh.CRYPTO_PF]) is True
    assert [_written(root, vf) for vf in gh.CRYPTO_VFS] == ['1', '1']
    # NOTE(tests): the PF keeps its host driver and the VFs: untouched.
    assert not os.path.exists(os.path.join(_dir(root, gh.CRYPTO_PF),
                                           'reset'))


def test_ascend_resets_the_npu(host):
    root = host('ascend-host')
    driver = huawei_ascend.HuaweiAscendDriver()
    npu = _found(driver, root)[ASCEND]
    _resettable(root, ASCEND)
    assert _scrub(driver, npu) is True
    assert _written(root, ASCEND) == '1'


def test_qat_resets_every_vf_it_lends_and_not_the_pf(host):
    root = host('qat-host')
    driver = intel_qat.IntelQatDriver()
    pf = _found(driver, root)[QAT_PF]
    vfs = [pci.handle_address(h) for h in pf.deployables[0].attach_handles]
    assert len(vfs) == 16
    for vf in vfs:
        _resettable(root, str(vf))
    _resettable(root, QAT_PF)
    assert _scrub(driver, pf) is True
    assert {_written(root, str(vf)) for vf in vfs} == {'1'}
    assert _written(root, QAT_PF) == ''


def test_qat_checks_every_vf_before_resetting_any(host):
    root = host('qat-host')
    driver = intel_qat.IntelQatDriver()
    pf = _found(driver, root)[QAT_PF]
    vfs = [str(pci.handle_address(h))
           for h in pf.deployables[0].attach_handles]
    for vf in vfs:
        _resettable(root, vf)
    os.remove(_dir(root, vfs[-1]))
    with pytest.raises(exception.DriverError, match=vfs[-1]):
        _scrub(driver, pf)
    assert {_written(root, vf) for vf in vfs[:-1]} == {''}


# --- NVIDIA: a whole GPU, or the parents of vGPUs nobody holds. -------------

def _nvidia(root):
    return _found(nvidia_gpu.NvidiaGpuDriver(), root)


def test_nvidia_resets_a_pgpu(host):
    root = host(nv.NAME)
    gpu = _nvidia(root)[nv.T4_FRESH]
    assert gpu.deployables[0].resource_class == 'PGPU'
    _resettable(root, nv.T4_FRESH)
    assert _scrub(nvidia_gpu.NvidiaGpuDriver(), gpu) is True
    assert _written(root, nv.T4_FRESH) == '1'


@pytest.fixture
def vgpus(override):
    override('enabled_vgpu_types', ['nvidia-222', 'nvidia-471'],
             group='gpu_devices')


def _entries(path):
    # NOTE(tests): git keeps no empty directory, so a clean checkout lacks
    # the kernel's empty mdev_supported_types/*/devices/.
    return os.listdir(path) if os.path.isdir(path) else []


def _held_mdevs(root, address):
    types = os.path.join(_dir(root, address), 'mdev_supported_types')
    return {t: _entries(os.path.join(types, t, 'devices'))
            for t in os.listdir(types)
            if _entries(os.path.join(types, t, 'devices'))}


def _release_all(root, address):
    """What release_handle leaves: no mdev on the parent any more."""
    types = os.path.join(_dir(root, address), 'mdev_supported_types')
    for type_id in os.listdir(types):
        devices = os.path.join(types, type_id, 'devices')
        for entry in _entries(devices):
            os.remove(os.path.join(devices, entry))


def test_nvidia_leaves_a_gpu_that_still_holds_a_vgpu(host, vgpus):
    root = host(nv.NAME)
    # NOTE(tests): the busy T4 holds one GRID T4-1B vGPU, in use.
    assert _held_mdevs(root, nv.T4_BUSY)
    t4 = _nvidia(root)[nv.T4_BUSY]
    _resettable(root, nv.T4_BUSY)
    assert _scrub(nvidia_gpu.NvidiaGpuDriver(), t4) is False
    assert _written(root, nv.T4_BUSY) == ''
    assert _held_mdevs(root, nv.T4_BUSY)


def test_nvidia_resets_the_vgpu_parent_once_its_mdevs_are_gone(host, vgpus):
    root = host(nv.NAME)
    t4 = _nvidia(root)[nv.T4_BUSY]
    _release_all(root, nv.T4_BUSY)
    _resettable(root, nv.T4_BUSY)
    assert _scrub(nvidia_gpu.NvidiaGpuDriver(), t4) is True
    assert _written(root, nv.T4_BUSY) == '1'


def test_nvidia_leaves_a_vgpu_parent_pf_with_vfs(host, vgpus):
    root = host(nv.NAME)
    t4 = _nvidia(root)[nv.T4_BUSY]
    _release_all(root, nv.T4_BUSY)
    _resettable(root, nv.T4_BUSY)
    # NOTE(tests): a PF with SR-IOV enabled shows a virtfnN link per VF;
    # its reset would take the VFs with it.
    os.symlink('../%s' % nv.T4_FRESH,
               os.path.join(os.path.realpath(_dir(root, nv.T4_BUSY)),
                            'virtfn0'))
    assert _scrub(nvidia_gpu.NvidiaGpuDriver(), t4) is False
    assert _written(root, nv.T4_BUSY) == ''


def test_nvidia_resets_only_the_vfs_that_hold_no_vgpu(host, vgpus):
    root = host(nv.NAME)
    a100 = _nvidia(root)[nv.A100_PF]
    (dep,) = a100.deployables
    parents = [str(pci.handle_address(h)) for h in dep.attach_handles]
    busy = [vf for vf in parents if _held_mdevs(root, vf)]
    assert busy and len(busy) < len(parents)
    for vf in parents:
        _resettable(root, vf)
    _resettable(root, nv.A100_PF)
    assert nvidia_gpu.NvidiaGpuDriver().scrub(a100, dep) is True
    assert {vf: _written(root, vf) for vf in parents} == {
        vf: '' if vf in busy else '1' for vf in parents}
    assert _written(root, nv.A100_PF) == ''


def test_nvidia_vgpu_parent_gone_fails(host, vgpus):
    root = host(nv.NAME)
    t4 = _nvidia(root)[nv.T4_BUSY]
    os.remove(_dir(root, nv.T4_BUSY))
    with pytest.raises(exception.DriverError, match=nv.T4_BUSY):
        _scrub(nvidia_gpu.NvidiaGpuDriver(), t4)


# --- FPGA: the default image, else a reset. ---------------------------------

def _image(tmp_path, name):
    path = str(tmp_path / name)
    with open(path, 'wb') as out:
        out.write(b'IMAGE')
    return path


def test_intel_fpga_loads_the_default_image(host, override, tmp_path):
    root = host('fpga-host')
    tool, record = tools_fixture.fake_tool(tmp_path, 'fpgaconf')
    override('fpgaconf_path', tool, group='fpga')
    override('dfl_fpgaconf_path', tool, group='fpga')
    image = _image(tmp_path, 'default.gbs')
    override('default_image', image, group='fpga')
    for vf in ARRIA10_VFS:
        _resettable(root, vf)
    driver = intel_fpga.IntelFpgaDriver()
    assert _scrub(driver, _found(driver, root)[ARRIA10]) is True
    assert tools_fixture.recorded_argv(record)[-1] == image
    # NOTE(tests): the image replaces the bitstream; no reset besides.
    assert {_written(root, vf) for vf in ARRIA10_VFS} == {''}


def test_intel_fpga_without_an_image_resets_its_vfs(host):
    root = host('fpga-host')
    driver = intel_fpga.IntelFpgaDriver()
    pac = _found(driver, root)[ARRIA10]
    assert _scrub(driver, pac) is False
    for vf in ARRIA10_VFS:
        _resettable(root, vf)
    assert _scrub(driver, pac) is True
    assert {_written(root, vf) for vf in ARRIA10_VFS} == {'1'}


def test_a_default_image_that_cannot_load_fails(host, override, tmp_path):
    root = host('fpga-host')
    override('default_image', str(tmp_path / 'missing.gbs'), group='fpga')
    driver = intel_fpga.IntelFpgaDriver()
    with pytest.raises(exception.DriverError, match='no such file'):
        _scrub(driver, _found(driver, root)[ARRIA10])


def test_xilinx_flashes_the_default_image(host, override, tmp_path):
    root = host('alveo-host')
    tool, record = tools_fixture.fake_tool(tmp_path, 'xbmgmt')
    override('xbmgmt_path', tool, group='fpga')
    image = _image(tmp_path, 'shell.xsabin')
    override('default_image', image, group='fpga')
    driver = xilinx_fpga.XilinxFpgaDriver()
    assert _scrub(driver, _found(driver, root)[U250_MGMT]) is True
    assert tools_fixture.recorded_argv(record) == [
        'program', '--device', U250_MGMT, '--base', '--image', image]


def test_xilinx_without_an_image_resets_the_user_function(host):
    root = host('alveo-host')
    driver = xilinx_fpga.XilinxFpgaDriver()
    card = _found(driver, root)[U250_MGMT]
    _resettable(root, U250_USER)
    _resettable(root, U250_MGMT)
    assert _scrub(driver, card) is True
    assert (_written(root, U250_USER), _written(root, U250_MGMT)) == (
        '1', '')
