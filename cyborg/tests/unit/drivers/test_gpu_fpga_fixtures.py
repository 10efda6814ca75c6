"""The committed GPU and FPGA host trees equal a fresh build of them."""

import pytest

from cyborg.tests.fixtures import gpu_fpga_hosts
from cyborg.tests.fixtures import pci_hosts


@pytest.mark.parametrize('host', sorted(gpu_fpga_hosts.HOSTS))
def test_committed_tree_equals_a_fresh_build(host, tmp_path):
    fresh = pci_hosts.snapshot(
        gpu_fpga_hosts.HOSTS[host](str(tmp_path / host)))
    committed = pci_hosts.snapshot(pci_hosts.committed(host))
    # NOTE(tests): regenerate with python -m
    # cyborg.tests.fixtures.gpu_fpga_hosts when a builder changes.
    assert sorted(committed) == sorted(fresh)
    for path, entry in fresh.items():
        assert committed[path] == entry, path


def test_snapshot_sees_links_and_bytes(tmp_path):
    root = gpu_fpga_hosts.build_gpu_host(str(tmp_path / 'gpu-host'))
    tree = pci_hosts.snapshot(root)
    assert tree['bus/pci/devices/0000:3b:00.0'] == (
        'link', '../../../devices/pci0000:3b/0000:3b:00.0')
    config = tree['devices/pci0000:3b/0000:3b:00.0/config']
    assert config[0] == 'file' and config[1][:4] == b'\xde\x10\xb8\x1e'
