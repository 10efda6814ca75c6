"""tools/capture-sysfs.py: a capture discovers as the tree it came from."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from cyborg.agent import resource_tracker
from cyborg.drivers import sysfs

TOOL = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                    'capture-sysfs.py')
FIXTURES = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'sysfs')
GPU_HOST = os.path.join(FIXTURES, 'gpu-host')
EVERYTHING = '{"vendor_id": "*", "product_id": "*"}'
DRIVERS = ['nvidia_gpu_driver', 'intel_fpga_driver', 'xilinx_fpga_driver',
           'intel_qat_driver', 'pci_driver']


def capture(root, output, *addresses, status=0):
    proc = subprocess.run(
        [sys.executable, TOOL, '--sysfs-root', str(root), str(output),
         *addresses], capture_output=True, text=True, timeout=120)
    assert proc.returncode == status, proc.stdout + proc.stderr
    return proc


def snapshot(root):
    """Every entry below ``root``: a link's target, a file's bytes."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                found[path] = os.readlink(path)
            elif os.path.isfile(path):
                with open(path, 'rb') as handle:
                    found[path] = handle.read()
            else:
                found[path] = None
    return found


def _vgpu_types(root):
    types = set()
    for dirpath, dirnames, _files in os.walk(os.path.join(root, 'devices')):
        if os.path.basename(dirpath) == 'mdev_supported_types':
            types.update(dirnames)
    return sorted(types)


def discover(override, root):
    """Device primitives by control address, every driver at once."""
    override('sysfs_root', str(root), group='agent')
    override('device_spec', [EVERYTHING], group='pci')
    override('enabled_vgpu_types', _vgpu_types(root), group='gpu_devices')
    tracker = resource_tracker.ResourceTracker('compute-1', DRIVERS)
    found, failed = tracker.discover()
    assert failed == []
    return {'%(domain)s:%(bus)s:%(device)s.%(function)s'
            % d['controlpath']['cpid_info']: json.dumps(d, sort_keys=True)
            for d in found.to_primitive()['devices']}


@pytest.mark.parametrize('host, asked, cards, functions', [
    ('gpu-host', ['af:00.5', '0000:3b:00.0'],
     ['0000:3b:00.0', '0000:af:00.0'],
     ['0000:3b:00.0', '0000:af:00.0', '0000:af:00.4', '0000:af:00.5',
      '0000:af:00.6', '0000:af:00.7']),
    # An Alveo's user function comes with its management function.
    ('platform-host', ['af:00.0', '18:02.1'],
     ['0000:18:00.0', '0000:18:02.0', '0000:18:02.1', '0000:af:00.0'],
     ['0000:18:00.0', '0000:18:02.0', '0000:18:02.1', '0000:af:00.0',
      '0000:af:00.1']),
    ('fpga-dfl-host', ['3b:00.0', '5e:00.1'],
     ['0000:3b:00.0', '0000:5e:00.0'],
     ['0000:3b:00.0', '0000:5e:00.0', '0000:5e:00.1']),
])
def test_a_capture_discovers_as_the_original(tmp_path, override, host,
                                             asked, cards, functions):
    source = os.path.join(FIXTURES, host)
    before = snapshot(source)
    out = tmp_path / 'capture'
    proc = capture(source, out, *asked)
    assert snapshot(source) == before
    assert 'Captured %d PCI functions' % len(functions) in proc.stdout
    assert sorted(os.listdir(out / 'bus' / 'pci' / 'devices')) == functions
    original = discover(override, source)
    captured = discover(override, out)
    assert sorted(captured) == cards
    for address in cards:
        assert captured[address] == original[address]
    if host == 'fpga-dfl-host':
        # The DFL containers, their class and bus entries, the module.
        assert os.path.islink(out / 'class' / 'fpga_region' / 'region0')
        assert os.path.islink(out / 'bus' / 'dfl' / 'devices' / 'dfl_dev.0')
        assert (out / 'module' / 'dfl_pci' / 'initstate').is_file()
    notes = (out / 'CAPTURE-NOTES').read_text().splitlines()
    assert notes[1].endswith(': ' + ' '.join(
        '0000:' + a if len(a) == 7 else a for a in asked))
    assert [line for line in notes if not line.startswith('#')] == []


def test_what_cannot_be_read_is_noted_not_fatal(tmp_path):
    root = tmp_path / 'sys'
    shutil.copytree(GPU_HOST, root, symlinks=True)
    fn = sysfs.Sysfs(str(root)).pci_function('0000:3b:00.0')
    os.mkfifo(os.path.join(fn.path, 'numa_node.fifo'))
    # NOTE(tests): git keeps no empty directory, so a clean clone lacks the
    # type's (empty) devices/ that the kernel always shows.
    devices = os.path.join(fn.path, 'mdev_supported_types', 'nvidia-222',
                           'devices')
    os.makedirs(devices, exist_ok=True)
    os.symlink('../nowhere', os.path.join(devices, 'gone'))
    create = os.path.join(fn.path, 'mdev_supported_types', 'nvidia-222',
                          'create')
    os.chmod(create, 0o200)
    with open(os.path.join(fn.path, 'rom'), 'w') as rom:
        rom.write('not copied')
    out = tmp_path / 'capture'
    capture(root, out, '3b:00.0', '0000:99:00.0', status=2)
    notes = (out / 'CAPTURE-NOTES').read_text()
    assert 'numa_node.fifo: not a regular file; left out' in notes
    assert ('nvidia-222/devices/gone: links to %s, which is not captured; '
            'left out' % os.path.relpath(os.path.join(
                os.path.realpath(fn.path), 'mdev_supported_types',
                'nvidia-222', 'nowhere'), os.path.realpath(root))) in notes
    assert 'bus/pci/devices/0000:99:00.0: no such PCI function' in notes
    copy = sysfs.Sysfs(str(out)).pci_function('0000:3b:00.0')
    assert os.path.getsize(os.path.join(
        copy.path, 'mdev_supported_types', 'nvidia-222', 'create')) == 0
    assert not os.path.exists(os.path.join(copy.path, 'rom'))
    assert copy.read('vendor') == fn.read('vendor')


@pytest.mark.parametrize('where', ['inside', 'not empty'])
def test_the_output_must_be_new_and_outside(tmp_path, where):
    root = tmp_path / 'sys'
    shutil.copytree(GPU_HOST, root, symlinks=True)
    before = snapshot(root)
    if where == 'inside':
        out = root / 'capture'
    else:
        out = tmp_path / 'out'
        out.mkdir()
        (out / 'keep').write_text('mine')
    proc = capture(root, out, '3b:00.0', status=2)
    assert 'outside the sysfs root' in proc.stderr or \
        'is not empty' in proc.stderr
    assert snapshot(root) == before


def _host_functions():
    try:
        return os.listdir('/sys/bus/pci/devices')
    except OSError:
        return []


@pytest.mark.skipif(not _host_functions(),
                    reason='no PCI functions in this host\'s sysfs')
def test_a_capture_of_this_host_reads_as_sysfs(tmp_path):
    real = sysfs.Sysfs('/sys')
    fn = real.pci_functions[-1]
    out = tmp_path / 'capture'
    capture('/sys', out, str(fn.address))
    copy = sysfs.Sysfs(str(out)).pci_function(fn.address)
    assert copy is not None
    for name in ('vendor_id', 'device_id', 'class_code', 'driver',
                 'numa_node', 'subsystem_vendor_id', 'subsystem_device_id',
                 'revision', 'iommu_group', 'virtfns', 'physfn'):
        assert getattr(copy, name) == getattr(fn, name), name
    with open(os.path.join(copy.path, 'config'), 'rb') as config:
        assert len(config.read()) <= 64
