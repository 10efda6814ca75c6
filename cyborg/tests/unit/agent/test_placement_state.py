"""The agent's saved Placement state reads back from old device keys."""

import json

from cyborg import states
from cyborg.agent import cache as report_cache
from cyborg.agent import resource_tracker
from cyborg.tests import placement as placement_helpers


def _old(text):
    """The key as an earlier release wrote it: its info a dict."""
    cpid_type, cpid_info = json.loads(text)
    return json.dumps([cpid_type, json.loads(cpid_info)])


def test_an_old_state_file_reads_as_todays_keys(placement, tmp_path):
    found, _failed = resource_tracker.ResourceTracker(
        'node1', ['fake_driver']).discover()
    devices = {report_cache.device_key(dev): dev
               for dev in found.to_primitive()['devices']}
    (key,) = devices
    placement.compute_node('node1')
    tree = placement_helpers.provider_tree(placement, 'node1', tmp_path)
    tree.set_statuses({key: states.DEVICE_READY}, replace=True)
    assert tree.sync(devices) == 0

    path = tree.path
    with open(path) as handle:
        data = json.load(handle)
    assert _old(key) != key
    for record in data['providers'].values():
        record['device'] = _old(record['device'])
    data['statuses'] = {_old(key): states.DEVICE_READY,
                        'not a key': states.DEVICE_READY}
    data['released'] = [_old(key), '["PCI"]']
    with open(path, 'w') as handle:
        json.dump(data, handle)

    again = placement_helpers.provider_tree(placement, 'node1', tmp_path)
    assert again.root == tree.root
    assert {r['device'] for r in again.providers.values()} == {key}
    assert again.statuses == {key: states.DEVICE_READY}
    assert again.released == {key}
    # Nothing to write: the old keys name the providers already there.
    before = again.client.calls
    assert again.sync(devices) == 0
    assert again.client.calls == before


def test_a_state_of_another_provider_name_keeps_no_providers(tmp_path):
    path = str(tmp_path / 'state.json')
    report_cache.write_json(path, {
        'name': 'old-name', 'root': 'r',
        'providers': {'u': {'device': None}},
        'statuses': {'["PCI", "{}"]': 'ready'}})
    state = report_cache.placement_state(path, 'node1')
    assert (state['root'], state['providers']) == (None, {})
    assert state['statuses'] == {'["PCI", "{}"]': 'ready'}
    assert report_cache.placement_state(
        str(tmp_path / 'missing.json'), 'node1') == {
        'root': None, 'providers': {}, 'statuses': {}, 'extra_traits': {},
        'taken': {}, 'decided': {}, 'released': set()}
