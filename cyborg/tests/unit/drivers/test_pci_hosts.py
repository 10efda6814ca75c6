"""The committed simulated hosts must equal what their builders write now.
"""

import os

import pytest

from cyborg.tests.fixtures import pci_hosts


def _snapshot(root):
    """Files (content) and symlinks (target) of a tree, by relative path.

    Directories are left out: git keeps none that are empty.
    """
    entries = {}
    for path, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(path, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                entries[rel] = ('link', os.readlink(full))
            elif os.path.isfile(full):
                with open(full, 'rb') as handle:
                    entries[rel] = ('file', handle.read())
    return entries


@pytest.mark.parametrize('host', sorted(pci_hosts.HOSTS))
def test_committed_tree_equals_a_fresh_build(tmp_path, host):
    pci_hosts.HOSTS[host](tmp_path)
    fresh = _snapshot(tmp_path)
    committed = _snapshot(pci_hosts.committed(host))
    assert sorted(committed) == sorted(fresh), (
        'run python -m cyborg.tests.fixtures.pci_hosts')
    assert committed == fresh


def test_main_rebuilds_the_named_hosts(tmp_path, monkeypatch):
    monkeypatch.setattr(pci_hosts, 'SYSFS_DIR', str(tmp_path))
    pci_hosts.main(['ascend-host'])
    assert os.listdir(tmp_path) == ['ascend-host']
    assert _snapshot(tmp_path / 'ascend-host') == _snapshot(
        os.path.join(os.path.dirname(pci_hosts.__file__), 'sysfs',
                     'ascend-host'))
