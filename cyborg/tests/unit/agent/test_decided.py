"""The agent writes what the conductor decided; it reads old device keys."""

import json

from cyborg import states
from cyborg.agent import cache as report_cache
from cyborg.agent import resource_tracker
from cyborg.drivers.report import DeviceKey
from cyborg.tests import placement as placement_helpers


def _devices():
    found, _failed = resource_tracker.ResourceTracker(
        'node1', ['fake_driver']).discover()
    return {report_cache.device_key(dev): dev
            for dev in found.to_primitive()['devices']}


def _tree(placement, tmp_path):
    placement.compute_node('node1')
    return placement_helpers.provider_tree(placement, 'node1', tmp_path)


def _provider(placement):
    (provider,) = placement.subtree('node1').values()
    return provider['inventories']['FPGA']['reserved'], provider['traits']


def test_the_conductors_decision_is_written_as_it_is(placement, tmp_path):
    devices = _devices()
    (key,) = devices
    (dep,) = devices[key]['deployables']
    tree = _tree(placement, tmp_path)
    # NOTE(tests): a status the old agent rule reserved, and traits it
    # would not have made up: only the decision counts.
    decided = {dep['name']: {'reserved': False, 'in_use': False,
                             'traits': ['OWNER_CYBORG', 'CUSTOM_DECIDED']}}
    tree.set_statuses({key: states.DEVICE_INACTIVE},
                      decided={key: decided}, replace=True)
    assert tree.sync(devices) == 0
    assert _provider(placement) == (0, {'OWNER_CYBORG', 'CUSTOM_DECIDED'})
    decided[dep['name']]['reserved'] = True
    tree.set_statuses({key: states.DEVICE_READY}, decided={key: decided})
    tree.sync(devices)
    assert _provider(placement) == (16, {'OWNER_CYBORG', 'CUSTOM_DECIDED'})


def test_an_older_conductors_answer_falls_back_to_its_rules(placement,
                                                            tmp_path):
    devices = _devices()
    (key,) = devices
    tree = _tree(placement, tmp_path)
    tree.set_statuses({key: states.DEVICE_READY}, replace=True)
    tree.sync(devices)
    assert _provider(placement)[0] == 0
    tree.set_statuses({key: states.DEVICE_MAINTAINING})
    tree.sync(devices)
    assert _provider(placement)[0] == 16


def test_the_report_answer_is_what_placement_gets(stack, placement):
    agent = stack('node1', placement=placement)
    agent.report()
    (device,) = agent.last_result['devices']
    ((name, decided),) = device['providers'].items()
    provider = placement.subtree('node1')[name]
    assert provider['traits'] == set(decided['traits'])
    total = provider['inventories']['FPGA']['total']
    assert provider['inventories']['FPGA']['reserved'] == (
        total if decided['reserved'] else 0)


def test_device_keys_read_from_every_encoding():
    key = DeviceKey.of('PCI', {'bus': '3d', 'domain': '0000'})
    assert key == ('PCI', '{"bus": "3d", "domain": "0000"}')
    for old in (key.text(), list(key), ['PCI', {'domain': '0000',
                                                'bus': '3d'}],
                json.dumps(['PCI', '{"domain":"0000","bus":"3d"}'])):
        assert DeviceKey.parse(old) == key
    assert DeviceKey.parse(key.text()).wire() == list(key)


def test_an_old_cache_file_reads_as_todays_keys(tmp_path):
    path = tmp_path / 'cache.json'
    old = json.dumps(['PCI', {'domain': '0000', 'bus': '3d'}])
    path.write_text(json.dumps({'generation': 3, 'devices': {old: {}},
                                'identity': None}))
    cache = report_cache.ReportCache(str(path))
    assert list(cache.devices) == [
        DeviceKey.of('PCI', {'bus': '3d', 'domain': '0000'}).text()]
    _changed, removed, _current = cache.diff([])
    assert removed == [['PCI', '{"bus": "3d", "domain": "0000"}']]
