"""Every driver at once on one simulated host, as an agent runs them."""

import collections

from cyborg.agent import resource_tracker
from cyborg.tests.fixtures import mixed_host
from cyborg.tests.fixtures import pci_hosts


def test_committed_tree_equals_a_fresh_build(tmp_path):
    fresh = pci_hosts.snapshot(mixed_host.build_mixed_host(str(tmp_path)))
    assert pci_hosts.snapshot(pci_hosts.committed(mixed_host.NAME)) == fresh


def _configure(override):
    override('sysfs_root', pci_hosts.committed(mixed_host.NAME),
             group='agent')
    override('device_spec', [mixed_host.AGENT_OPTIONS['pci']['device_spec']],
             group='pci')
    override('enabled_vgpu_types', ['nvidia-222'], group='gpu_devices')


def test_every_kind_is_reported(override):
    _configure(override)
    from oslo_config import cfg

    from cyborg.conf import gpu
    gpu.register_dynamic_opts(cfg.CONF)
    override('device_addresses', [mixed_host.VGPU_GPU],
             group='vgpu_nvidia-222')
    names = mixed_host.AGENT_OPTIONS['agent']['enabled_drivers'].split(',')
    tracker = resource_tracker.ResourceTracker('node1', names)
    host_report, failed = tracker.discover()
    assert failed == []
    found = collections.defaultdict(list)
    for device in host_report.devices:
        for dep in device.deployables:
            found[device.type].append((dep.resource_class,
                                       dep.num_accelerators,
                                       len(dep.attach_handles)))
            assert dep.name.startswith('node1_0000:')
            assert 'OWNER_CYBORG' in dep.traits
    assert {k: sorted(v) for k, v in found.items()} == {
        k: sorted(v) for k, v in mixed_host.EXPECTED.items()}
    pci_hosts.check_report('node1', host_report.devices)
