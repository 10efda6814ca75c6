"""Every driver over every committed tree, damaged with a fixed seed."""

from cyborg.tests import damage_fuzz

SEED = 20261125
ROUNDS = 80


def test_undamaged_trees_are_discovered_whole(override):
    for name in damage_fuzz.hosts():
        root = damage_fuzz.pci_hosts.committed(name)
        damage_fuzz.configure(override, root)
        host_report, failed = damage_fuzz.discover(root)
        damage_fuzz.check(host_report, host_report, failed, root, [])


def test_damaged_trees_lose_only_what_is_damaged(override, tmp_path):
    done = damage_fuzz.run(override, tmp_path, SEED, ROUNDS)
    assert done >= ROUNDS
