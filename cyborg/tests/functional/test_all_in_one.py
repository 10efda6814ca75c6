"""The embedded default: one process, SQLite, in-process messaging."""

import signal
import time

import pytest
import requests

from cyborg import embedded_placement
from cyborg.tests import placement as placement_helpers
from cyborg.tests import processes

pytestmark = pytest.mark.functional


def _start(tmp_path, port, placement_port):
    conf = processes.write_config(tmp_path / 'aio.conf', {
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': 'aio'},
        'api': {'port': port},
        'embedded_placement': {'port': placement_port},
    })
    return processes.Process('cyborg-all-in-one', conf, tmp_path)


def _providers(placement_url, host):
    """name -> (inventories, traits) of a compute node's children."""
    client = embedded_placement.client_for(placement_url)
    root = client.provider_by_name(host)
    if root is None:
        return {}
    return {name: (p['inventories'], p['traits']) for name, p in
            placement_helpers.children(client, root['uuid']).items()}


def _fake_device(url):
    resp = requests.get(url + '/v2/devices', timeout=5)
    if resp.status_code == 200 and resp.json()['devices']:
        return resp.json()['devices']
    return None


def test_device_within_five_seconds_and_restart_keeps_data(tmp_path):
    port, placement_port = processes.free_port(), processes.free_port()
    url = 'http://127.0.0.1:%d' % port
    placement_url = 'http://127.0.0.1:%d' % placement_port
    proc = _start(tmp_path, port, placement_port)
    started = time.monotonic()
    try:
        devices = processes.wait_for(lambda: _fake_device(url), 30,
                                     interval=0.1, what='the fake device')
        elapsed = time.monotonic() - started
        assert elapsed < 5, 'device visible only after %.1fs' % elapsed
        assert [d['hostname'] for d in devices] == ['aio']
        providers = processes.wait_for(
            lambda: _providers(placement_url, 'aio'), 30,
            what='the provider in the embedded Placement')
        inventories, traits = providers['aio_FakeDevice']
        assert inventories['FPGA']['total'] == 16
        assert {'OWNER_CYBORG', 'CUSTOM_FAKE_DEVICE'} <= traits
        # The banner names both URLs.
        assert url in proc.log() and placement_url in proc.log()
    finally:
        code = proc.stop(signal.SIGINT)
    assert code == 0, proc.log()
    assert 'Traceback' not in proc.log()

    proc = _start(tmp_path, port, placement_port)
    try:
        again = processes.wait_for(lambda: _fake_device(url), 30,
                                   what='the device after a restart')
        assert [d['uuid'] for d in again] == [d['uuid'] for d in devices]
    finally:
        assert proc.stop(signal.SIGTERM) == 0, proc.log()


def test_simulated_host_with_every_driver(tmp_path):
    """The embedded default on a simulated host lists each kind of card."""
    import collections
    import json

    from cyborg.tests.fixtures import mixed_host
    from cyborg.tests.fixtures import pci_hosts

    port, placement_port = processes.free_port(), processes.free_port()
    url = 'http://127.0.0.1:%d' % port
    sections = {
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': 'node1'},
        'api': {'port': port},
        'embedded_placement': {'port': placement_port},
    }
    for group, options in mixed_host.AGENT_OPTIONS.items():
        sections.setdefault(group, {}).update(options)
    sections['agent']['sysfs_root'] = pci_hosts.committed(mixed_host.NAME)
    conf = processes.write_config(tmp_path / 'aio.conf', sections)
    proc = processes.Process('cyborg-all-in-one', conf, tmp_path)
    try:
        expected_devices = sum(len(v) for v in mixed_host.EXPECTED.values())
        # Two GPU deployables belong to two GPU devices, one each.
        devices = processes.wait_for(
            lambda: (lambda d: d if d and len(d) == expected_devices
                     else None)(_fake_device(url)), 30, what='the devices')
        deployables = requests.get(url + '/v2/deployables',
                                   timeout=5).json()['deployables']
        # NOTE(tests): the provider tree matches the hardware: one provider
        # per deployable, in its class, with its traits.
        providers = processes.wait_for(
            lambda: (lambda p: p if len(p) == len(deployables) else None)(
                _providers('http://127.0.0.1:%d' % placement_port, 'node1')),
            30, what='every provider in the embedded Placement')
    finally:
        assert proc.stop() == 0, proc.log()
    types = {d['uuid']: d['type'] for d in devices}
    assert collections.Counter(types.values()) == collections.Counter(
        {kind: len(v) for kind, v in mixed_host.EXPECTED.items()})
    found = collections.defaultdict(list)
    for dep in deployables:
        attrs = {k: v for item in json.loads(dep['attributes_list'])
                 for k, v in item.items()}
        traits = {v for k, v in attrs.items() if k.startswith('trait')}
        assert 'OWNER_CYBORG' in traits, dep
        assert dep['name'].startswith('node1_0000:')
        found[_device_type(devices, dep)].append(
            (attrs['rc'], dep['num_accelerators']))
        inventories, provider_traits = providers[dep['name']]
        assert inventories[attrs['rc']]['total'] == dep['num_accelerators']
        assert traits <= provider_traits
    assert {k: sorted(v) for k, v in found.items()} == {
        k: sorted((rc, n) for rc, n, _h in v)
        for k, v in mixed_host.EXPECTED.items()}
    assert 'Traceback' not in proc.log()


def _device_type(devices, deployable):
    # NOTE(tests): the v2 API links a deployable to its device only by the
    # internal device_id; the devices come back in id order.
    return devices[deployable['device_id'] - 1]['type']
