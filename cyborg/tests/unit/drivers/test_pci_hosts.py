"""The committed simulated hosts must equal a fresh build of them."""

import os

import pytest

from cyborg.tests.fixtures import pci_hosts


@pytest.mark.parametrize('host', sorted(pci_hosts.HOSTS))
def test_committed_tree_equals_a_fresh_build(tmp_path, host):
    fresh = pci_hosts.snapshot(pci_hosts.HOSTS[host](str(tmp_path)))
    committed = pci_hosts.snapshot(pci_hosts.committed(host))
    # NOTE(tests): regenerate with python -m cyborg.tests.fixtures.pci_hosts
    # when a builder changes.
    assert sorted(committed) == sorted(fresh)
    assert committed == fresh


def test_main_rebuilds_the_named_hosts(tmp_path, monkeypatch):
    committed = pci_hosts.snapshot(pci_hosts.committed('ascend-host'))
    monkeypatch.setattr(pci_hosts, 'SYSFS_DIR', str(tmp_path))
    pci_hosts.main(['ascend-host'])
    assert os.listdir(tmp_path) == ['ascend-host']
    assert pci_hosts.snapshot(str(tmp_path / 'ascend-host')) == committed


def test_functions_have_a_config_space():
    tree = pci_hosts.snapshot(pci_hosts.committed('qat-host'))
    kind, config = tree['devices/pci0000:3d/0000:3d:00.0/config']
    assert (kind, config[:4]) == ('file', b'\x86\x80\xc8\x37')
