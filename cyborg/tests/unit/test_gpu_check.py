"""tools/gpu-check.py and the h200-vm-host tree captured on a real GPU."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from cyborg.agent import resource_tracker
from cyborg.drivers import base
from cyborg.tests.fixtures import fake_libnvml
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.fixtures import pynvml_versions

REPO = os.path.join(os.path.dirname(__file__), '..', '..', '..')
TOOL = os.path.join(REPO, 'tools', 'gpu-check.py')
DRIVERS_DOC = os.path.join(REPO, 'doc', 'source', 'admin', 'drivers.rst')
HOST = 'h200-vm-host'
H200 = '0000:00:06.0'
#: Every driver, so that the inventory is the whole host's.
DRIVERS = ['nvidia_gpu_driver', 'intel_fpga_driver', 'xilinx_fpga_driver',
           'intel_qat_driver', 'huawei_ascend_driver', 'pci_driver']
EVERYTHING = '{"vendor_id": "*", "product_id": "*"}'
#: Rows of the real GPU's table that vary from run to run or are
#: withheld in the documentation.
_VOLATILE = ('uuid', 'serial', 'nvidia-ml-py', 'metrics', '')


def _tool():
    spec = importlib.util.spec_from_file_location('gpu_check', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def h200(override):
    override('sysfs_root', pci_hosts.committed(HOST), group='agent')
    override('device_spec', [EVERYTHING], group='pci')
    return pci_hosts.committed(HOST)


def test_the_captured_h200_host_reports_exactly_its_gpu(h200, override):
    # NOTE(tests): the facts are those of the H200 the tree was captured
    # on (nvidia-smi: NVIDIA H200, 10de:2335, subsystem 10de:18bf, bus
    # 00000000:00:06.0); every driver runs, the generic PCI driver with
    # a device_spec taking every function, and only the GPU is reported.
    override('use_nvml', False, group='health')
    tracker = resource_tracker.ResourceTracker('vm', DRIVERS)
    host_report, failed = tracker.discover()
    assert failed == []
    pci_hosts.check_report('vm', host_report.devices)
    (device,) = host_report.devices
    assert (device.type, device.vendor, device.model, device.driver_name) \
        == ('GPU', '0x10de', 'NVIDIA GPU 0x2335', 'nvidia_gpu')
    assert device.controlpath.cpid_info == {
        'domain': '0000', 'bus': '00', 'device': '06', 'function': '0'}
    assert device.std_board_info == {
        'class': '0x030200', 'device_id': '0x2335',
        'kernel_driver': 'nvidia', 'subsystem_device_id': '0x18bf',
        'subsystem_vendor_id': '0x10de', 'vendor_id': '0x10de'}
    assert (device.modes, device.mode, device.services) == (
        ['passthrough'], 'passthrough', ['gpu.compute'])
    (dep,) = device.deployables
    assert (dep.name, dep.resource_class, dep.num_accelerators) == (
        'vm_0000:00:06.0', 'PGPU', 1)
    assert dep.traits == ['OWNER_CYBORG', 'CUSTOM_NVIDIA_2335']
    assert [(h.attach_type, h.attach_info) for h in dep.attach_handles] == [
        ('PCI', device.controlpath.cpid_info)]
    # NOTE(tests): a GPU passed into a virtual machine alone: no AER
    # files, so the aer check does not apply; no hwmon under nvidia.
    assert (device.health, device.health_reason, device.health_sources,
            device.warnings) == ('ok', None, ['pci', 'link'], [])


def _documented_rows():
    """The rows of the table tools/gpu-check.py printed on the real H200,
    as the drivers guide quotes it."""
    with open(DRIVERS_DOC, encoding='utf-8') as f:
        text = f.read()
    section = text[text.index('Checked on a real GPU'):]
    block = section[section.index('.. code-block:: text'):]
    block = block[:block.index('\nWhat it showed:')]
    return _rows(line[3:] for line in block.splitlines()[2:])


def _rows(lines):
    rows = {}
    key = None
    for line in lines:
        match = re.match(r'^(\S.*?)\s{2,}(.*)$', line)
        if line.startswith(' ') and key is not None:
            rows[key].append(line.strip())
        elif match and not line.startswith(('GPU ', '---', 'Cyborg ')):
            key = match.group(1)
            rows[key] = [match.group(2)]
    return rows


def _like_the_real_h200(lib):
    # NOTE(tests): what NVML answered on the real H200 (nvidia-smi -q and
    # the tool's table): the driver, NVML and CUDA versions, the name,
    # 143771 MiB of memory of which 615 MiB in use, 80 W, 39 C.
    lib.driver_version = '580.159.04'
    lib.nvml_version = '13.580.159.04'
    lib.cuda_driver_version = 13000
    return lib.gpu(H200, name='NVIDIA H200', vbios='96.00.A5.00.1A',
                   pci_device_id=0x233510DE,
                   memory=(150754820096, 644940000), temperature=39,
                   power_mw=80552)


@pytest.mark.parametrize('version', ['oldest', 'newest'])
def test_the_tool_prints_the_real_gpus_table(h200, version):
    source = getattr(pynvml_versions, version)()
    tool = _tool()
    pynvml = pynvml_versions.load(source)
    with fake_libnvml.installed(pynvml) as lib, \
            fake_libnvml.imported(pynvml):
        _like_the_real_h200(lib)
        result = tool.check('vm')
    assert tool.exit_code(result) == 0
    (gpu,) = result['gpus']
    assert gpu['nvml']['pynvml'] in (source.version, 'unknown')
    printed = _rows(tool.render(result).splitlines())
    documented = _documented_rows()
    assert {key: value for key, value in printed.items()
            if key not in _VOLATILE} == {
        key: value for key, value in documented.items()
        if key not in _VOLATILE}
    assert [line.split(' = ')[0] for line in printed['metrics']] == [
        line.split(' = ')[0] for line in documented['metrics']]
    assert gpu['metrics']['temperature_celsius'] == 39.0
    assert gpu['metrics']['power_watts'] == 80.552


@pytest.mark.parametrize('version', ['oldest', 'newest'])
def test_a_failed_gpu_makes_the_tool_exit_1(h200, version):
    tool = _tool()
    pynvml = pynvml_versions.load(getattr(pynvml_versions, version)())
    with fake_libnvml.installed(pynvml) as lib, \
            fake_libnvml.imported(pynvml):
        gpu = _like_the_real_h200(lib)
        gpu.ecc[(fake_libnvml.UNCORRECTED, fake_libnvml.VOLATILE)] = 2
        result = tool.check('vm')
    assert (result['gpus'][0]['health'],
            result['gpus'][0]['health_reason']) == (
        base.FAILED, 'NVML uncorrected ECC errors: 2')
    assert tool.exit_code(result) == 1


def _run(*args):
    return subprocess.run([sys.executable, TOOL, *args],
                          capture_output=True, text=True, timeout=120)


def test_the_command_without_nvml_judges_by_sysfs(tmp_path):
    proc = _run('--sysfs-root', pci_hosts.committed(HOST), '--host', 'vm',
                '--no-nvml', '--json', str(tmp_path / 'out.json'),
                '--capture', str(tmp_path / 'capture'))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = _rows(proc.stdout.splitlines())
    assert rows['health'] == ['ok (checks: pci link)']
    assert rows['Xid events'] == ['not registered (no NVML handle)']
    assert rows['deployables'] == ['vm_0000:00:06.0: PGPU x1 (PCI)']
    assert (tmp_path / 'out.json').exists()
    # NOTE(tests): the capture of a capture is the same tree.
    copied = pci_hosts.snapshot(str(tmp_path / 'capture'))
    committed = pci_hosts.snapshot(pci_hosts.committed(HOST))
    copied.pop('CAPTURE-NOTES')
    committed.pop('CAPTURE-NOTES')
    assert copied == committed


def test_the_command_lists_what_it_does_not_report():
    proc = _run('--sysfs-root', pci_hosts.committed('nvidia-host'),
                '--no-nvml')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '0000:d8:00.1: class 0403 is no GPU' in proc.stdout
    assert '0000:03:00.0' not in proc.stdout  # the ASPEED BMC's display


def test_a_host_without_gpus_exits_2():
    proc = _run('--sysfs-root', pci_hosts.committed('qat-host'), '--no-nvml')
    assert proc.returncode == 2
    assert 'No NVIDIA GPU found' in proc.stdout
