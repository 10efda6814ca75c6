"""/v2/drivers and /v2/services (2.5): list, install, uninstall, update,
services and discovery on demand, against a running agent."""

import os

import pytest

from cyborg.conductor import hostwork
from cyborg.drivers import fake
from cyborg.tests.fixtures import generic_host
from cyborg.tests.fixtures import gpu_fpga_hosts
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header
from cyborg.tests.unit.drivers import test_generic

V25 = dict(ADMIN, **version_header('accelerator 2.5'))
V212 = dict(ADMIN, **WITH_CODES)
INSTANCE = '5bb6ea9a-8a9f-4f8e-9a43-0b1a44c0b6c1'


@pytest.fixture
def node(stack, placement, api, override):
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack('node1', placement=placement)
    agent.report()
    return agent


def _driver(api, name, host='node1'):
    found = [d for d in api.get('/v2/drivers?host=' + host,
                                headers=V25).json['drivers']
             if d['name'] == name]
    assert len(found) == 1, found
    return found[0]


def test_routes_need_2_5(api, node):
    for version in ('accelerator 2.4', None):
        headers = dict(ADMIN, **version_header(version)) if version \
            else ADMIN
        resp = api.get('/v2/drivers', headers=headers, status=404)
        assert '2.5' in fault(resp)['faultstring']
        api.get('/v2/services', headers=headers, status=404)


def test_driver_list_shows_every_installed_driver(api, node):
    drivers = api.get('/v2/drivers', headers=V25).json['drivers']
    names = {d['name'] for d in drivers}
    assert {'fake_driver', 'pci_driver', 'nvidia_gpu_driver'} <= names
    fake = _driver(api, 'fake_driver')
    assert fake == {'host': 'node1', 'name': 'fake_driver',
                    'driver_name': 'fake', 'version': '1.0',
                    'enabled': True, 'device_count': 1}
    assert _driver(api, 'pci_driver')['enabled'] is False
    api.get('/v2/drivers?host=nowhere', headers=V25, status=404)
    api.get('/v2/drivers?colour=red', headers=V25, status=400)


def test_install_then_uninstall(api, node, placement):
    resp = api.post_json('/v2/drivers', {'host': 'node1',
                                         'name': 'pci_driver'},
                         headers=V25, status=201)
    assert resp.json['enabled'] is True
    assert resp.headers['Location'].endswith('/v2/drivers/node1/pci_driver')
    assert 'pci_driver' in node.tracker.drivers
    resp = api.post_json('/v2/drivers', {'host': 'node1',
                                         'name': 'pci_driver'},
                         headers=V212, status=409)
    assert code(resp) == 'cyborg.driver.already_enabled'
    # NOTE(tests): clients send Accept: application/json even where the
    # answer has no body.
    resp = api.delete('/v2/drivers/node1/pci_driver', status=204,
                      headers=dict(V25, Accept='application/json'))
    assert resp.body == b''
    assert _driver(api, 'pci_driver')['enabled'] is False
    api.delete('/v2/drivers/node1/pci_driver', headers=V25, status=404)


def test_install_errors(api, node):
    resp = api.post_json('/v2/drivers', {'host': 'node1', 'name': 'nope'},
                         headers=V212, status=404)
    assert code(resp) == 'cyborg.driver.not_installed'
    resp = api.post_json('/v2/drivers', {'host': 'node9',
                                         'name': 'pci_driver'},
                         headers=V212, status=404)
    assert code(resp) == 'cyborg.agent.not_found'
    for body in ({}, {'host': 'node1'}, {'host': 'node1', 'name': 'x',
                                         'force': True}, [1]):
        api.post_json('/v2/drivers', body, headers=V25, status=400)


def test_uninstall_refused_while_bound_then_devices_go(api, node,
                                                       placement):
    (item,) = api.get('/v1/accelerators', headers=ADMIN).json['accelerator']
    api.put_json('/v1/accelerators/' + item['uuid'],
                 {'instance_uuid': INSTANCE}, headers=ADMIN)
    resp = api.delete('/v2/drivers/node1/fake_driver', headers=V212,
                      status=409)
    assert code(resp) == 'cyborg.driver.in_use'
    assert _driver(api, 'fake_driver')['enabled'] is True
    api.delete('/v1/accelerators/' + item['uuid'], headers=ADMIN,
               status=204)
    api.delete('/v2/drivers/node1/fake', headers=V25, status=204)
    assert api.get('/v2/devices', headers=ADMIN).json['devices'] == []
    assert placement.subtree('node1') == {}
    assert _driver(api, 'fake_driver') == {
        'host': 'node1', 'name': 'fake_driver', 'driver_name': 'fake',
        'version': '1.0', 'enabled': False, 'device_count': 0}


def test_update_reloads_options_and_reports_changes(api, node, override):
    override('device_count', 2, group='fake_driver')
    resp = api.patch_json('/v2/drivers/node1/fake_driver', {},
                          headers=V25)
    assert len(resp.json['changes']['added']) == 1
    assert resp.json['changes']['removed'] == []
    assert resp.json['device_count'] == 2
    # An empty body is an update too; nothing changes now.
    resp = api.patch('/v2/drivers/node1/fake_driver', headers=V25)
    assert resp.json['changes'] == {'added': [], 'removed': [],
                                    'changed': []}
    api.patch_json('/v2/drivers/node1/pci_driver', {}, headers=V25,
                   status=404)
    api.patch_json('/v2/drivers/node1/fake_driver', {'image_uuid': 'x'},
                   headers=V25, status=400)


def test_services_and_discovery(api, node, override):
    services = api.get('/v2/services', headers=V25).json['services']
    assert [(s['host'], s['driver_name'], s['device_type'], s['services'])
            for s in services] == [('node1', 'fake', 'FPGA',
                                    ['fpga.function:fake'])]
    assert api.get('/v2/services?driver=pci', headers=V25).json[
        'services'] == []
    api.get('/v2/services?host=node9', headers=V25, status=404)
    override('device_count', 3, group='fake_driver')
    hosts = api.post_json('/v2/services/discover', {'host': 'node1'},
                          headers=V25).json['hosts']
    assert len(hosts) == 1 and hosts[0]['error'] is None
    assert len(hosts[0]['added']) == 2
    override('device_count', 1, group='fake_driver')
    hosts = api.post('/v2/services/discover', headers=V25).json['hosts']
    assert [h['host'] for h in hosts] == ['node1']
    assert len(hosts[0]['removed']) == 2
    api.post_json('/v2/services/discover', {'host': 'node9'}, headers=V25,
                  status=404)
    api.post_json('/v2/services/discover', {'hosts': []}, headers=V25,
                  status=400)


def test_failed_install_step_leaves_the_host_as_it_was(
        api, stack, override, tmp_path, monkeypatch):
    """The generic driver's install step needs a kernel module that is not
    loaded and that modprobe cannot load."""
    options = {group: dict(values) for group, values in
               generic_host.AGENT_OPTIONS.items() if group != 'agent'}
    options['generic_backend_inference']['kernel_module'] = 'not_there'
    test_generic._configure(override, options)
    override('sysfs_root', pci_hosts.committed(generic_host.NAME),
             group='agent')
    tools = tmp_path / 'bin'
    tools.mkdir()
    gpu_fpga_hosts.fake_tool(tools, 'modprobe', exit_code=1,
                             stderr='modprobe: FATAL: Module not_there not '
                                    'found')
    monkeypatch.setenv('PATH', '%s:%s' % (tools, os.environ['PATH']))
    with pci_hosts.privsep_in_process():
        agent = stack('node1')
        agent.report()
        before = api.get('/v2/devices', headers=ADMIN).json['devices']
        resp = api.post_json('/v2/drivers', {'host': 'node1',
                                             'name': 'generic_driver'},
                             headers=V212, status=409)
    assert code(resp) == 'cyborg.driver.install_failed'
    message = fault(resp)['faultstring']
    assert 'the host is as it was' in message
    assert 'Module not_there not found' in message
    assert 'generic_driver' not in agent.tracker.drivers
    assert _driver(api, 'generic_driver')['enabled'] is False
    assert api.get('/v2/devices', headers=ADMIN).json['devices'] == before


def test_failed_update_is_409_and_image_update_waits_for_detach(
        api, node, monkeypatch):
    def broken(self, devices, image_path=None):
        raise RuntimeError('firmware rejected')

    monkeypatch.setattr(fake.FakeDriver, 'update', broken)
    resp = api.patch_json('/v2/drivers/node1/fake_driver', {},
                          headers=V212, status=409)
    assert code(resp) == 'cyborg.driver.update_failed'
    assert 'firmware rejected' in fault(resp)['faultstring']
    assert _driver(api, 'fake_driver')['enabled'] is True
    (item,) = api.get('/v1/accelerators', headers=ADMIN).json['accelerator']
    api.put_json('/v1/accelerators/' + item['uuid'],
                 {'instance_uuid': INSTANCE}, headers=ADMIN)
    monkeypatch.setattr(hostwork, 'resolve_image', lambda image, *a: image)
    resp = api.patch_json('/v2/drivers/node1/fake_driver',
                          {'image_uuid': INSTANCE}, headers=V212,
                          status=409)
    assert code(resp) == 'cyborg.driver.in_use'
