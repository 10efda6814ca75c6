"""/v1/accelerators: list, show, create, spec updates, attach and detach."""

import shutil

import pytest

from cyborg.tests.fixtures import generic_host
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.drivers import test_generic

URL = '/v1/accelerators'
INSTANCE = '5bb6ea9a-8a9f-4f8e-9a43-0b1a44c0b6c1'
MEMBER = {'X-Roles': 'manager', 'X-Project-Id': 'p1', 'X-User-Id': 'u1'}
OTHER = {'X-Roles': 'manager', 'X-Project-Id': 'p2', 'X-User-Id': 'u2'}


@pytest.fixture
def node(stack, placement, api, override):
    """The fake driver's host (ready), its provider in a real Placement."""
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack('node1', placement=placement)
    agent.report()
    (item,) = api.get(URL, headers=ADMIN).json['accelerator']
    return {'agent': agent, 'item': item}


def _reserved(placement, item):
    inv = placement.subtree('node1')[item['name']]['inventories']['FPGA']
    return inv['reserved'], inv['total']


def test_discovered_deployable_is_an_accelerator(api, node):
    item = node['item']
    assert item['acc_specs'] == {
        'remote': 0, 'num': 16, 'device_type': 'FPGA',
        'acc_capability': {'num': 16, 'resource_class': 'FPGA',
                           'traits': ['CUSTOM_FAKE_DEVICE'],
                           'services': ['fpga.function:fake']}}
    assert item['host'] == 'node1'
    assert item['deployable_uuid'] == item['uuid']
    assert item['attachments'] == []
    one = api.get(URL + '/' + item['uuid'], headers=ADMIN)
    assert one.json == item
    assert one.headers['ETag'] == '"1"'
    assert 'OpenStack-API-Version' not in one.headers


def test_unknown_accelerator_is_404(api, node):
    resp = api.get(URL + '/8e45a2ea-5364-4b0d-a252-bf8becaa606e',
                   headers=ADMIN, status=404)
    assert 'could not be found' in fault(resp)['faultstring']
    api.get(URL + '/not-a-uuid', headers=ADMIN, status=404)
    api.delete(URL + '/8e45a2ea-5364-4b0d-a252-bf8becaa606e',
               headers=ADMIN, status=404)


def test_create_then_update_spec(api, node):
    uuid = '8e45a2ea-5364-4b0d-a252-bf8becaa606e'
    resp = api.post_json(URL, {'name': 'IPSec Card', 'uuid': uuid},
                         headers=dict(ADMIN, Accept='application/json'),
                         status=201)
    assert resp.body == b''
    assert resp.headers['Location'].endswith(URL + '/' + uuid)
    created = api.get(URL + '/' + uuid, headers=ADMIN)
    assert created.json['acc_specs'] == {'remote': 1, 'num': 1,
                                         'device_type': None,
                                         'acc_capability': {}}
    spec = {'remote': 0, 'num': 1, 'device_type': 'CRYPTO',
            'acc_capability': {'num': 2, 'ipsec': {'aes': {'3des': 50,
                                                           'num': 1}}}}
    updated = api.put_json(URL + '/%s/acc_specs' % uuid,
                           {'acc_specs': spec}, headers=dict(
                               ADMIN, **{'If-Match': created.headers['ETag']}))
    assert updated.json['acc_specs'] == spec
    assert updated.headers['ETag'] == '"2"'
    # One key of the spec.
    resp = api.put_json(URL + '/%s/num' % uuid, {'num': 4}, headers=ADMIN)
    assert resp.json['acc_specs']['num'] == 4
    # A client that read revision 1 lost the race.
    resp = api.put_json(URL + '/%s/acc_specs' % uuid, {'acc_specs': spec},
                        headers=dict(ADMIN, **{'If-Match': '"1"'}),
                        status=409)
    assert 'changed by another request' in fault(resp)['faultstring']
    assert len(api.get(URL, headers=ADMIN).json['accelerator']) == 2


@pytest.mark.parametrize('body', [
    {}, {'uuid': '8e45a2ea-5364-4b0d-a252-bf8becaa606e'}, {'name': ''},
    {'name': 'x', 'extra': 1}, {'name': 'x', 'uuid': 'nope'}, [],
    {'name': 7}])
def test_create_rejects_bad_bodies(api, node, body):
    resp = api.post_json(URL, body, headers=ADMIN, status=400)
    assert fault(resp)['faultcode'] == 'Client'


def test_duplicate_names_and_uuids_conflict(api, node):
    api.post_json(URL, {'name': 'rack-1'}, headers=ADMIN, status=201)
    resp = api.post_json(URL, {'name': 'rack-1'}, headers=ADMIN, status=409)
    assert 'name rack-1' in fault(resp)['faultstring']
    api.post_json(URL, {'name': node['item']['name']}, headers=ADMIN,
                  status=409)
    api.post_json(URL, {'name': 'other', 'uuid': node['item']['uuid']},
                  headers=ADMIN, status=409)


@pytest.mark.parametrize('path,body', [
    ('acc_specs', {'acc_specs': {'num': 0}}),
    ('acc_specs', {'acc_specs': {'colour': 'red'}}),
    ('acc_specs', {'spec': {}}),
    ('num', {'num': 'two'}),
    ('remote', {'remote': 2}),
    ('device_type', {'device_type': 'a b'}),
])
def test_bad_spec_updates_are_400(api, node, path, body):
    uuid = node['item']['uuid']
    api.put_json(URL + '/%s/%s' % (uuid, path), body, headers=ADMIN,
                 status=400)


def test_hardware_spec_of_discovered_is_the_drivers(api, node):
    uuid = node['item']['uuid']
    resp = api.put_json(URL + '/%s/num' % uuid, {'num': 3}, headers=ADMIN,
                        status=409)
    assert 'comes from the hardware' in fault(resp)['faultstring']
    api.put_json(URL + '/%s/colour' % uuid, {'colour': 1}, headers=ADMIN,
                 status=404)
    resp = api.put_json(URL + '/%s/acc_capability' % uuid,
                        {'acc_capability': {'latency_us': 3}},
                        headers=ADMIN)
    assert resp.json['acc_specs']['acc_capability']['latency_us'] == 3
    assert resp.json['acc_specs']['acc_capability']['num'] == 16


def test_attach_to_instance_binds_an_arq_and_reserves(api, node, placement):
    item = node['item']
    assert _reserved(placement, item) == (0, 16)
    resp = api.put_json(URL + '/' + item['uuid'],
                        {'instance_uuid': INSTANCE}, headers=MEMBER)
    (attached,) = resp.json['attachments']
    assert attached['type'] == 'instance'
    assert attached['state'] == 'attached'
    assert attached['instance_uuid'] == INSTANCE
    arq = api.get('/v2/accelerator_requests/' + attached['arq_uuid'],
                  headers=ADMIN).json
    assert arq['state'] == 'Bound'
    assert arq['instance_uuid'] == INSTANCE
    assert arq['attach_handle_type'] == 'TEST_PCI'
    assert _reserved(placement, item) == (16, 16)
    # A second attach, to anything, conflicts.
    resp = api.put_json(URL + '/' + item['uuid'],
                        {'instance_uuid': INSTANCE}, headers=MEMBER,
                        status=409)
    assert 'already attached' in fault(resp)['faultstring']
    # Another project may not detach it; its own may.
    api.delete(URL + '/' + item['uuid'], headers=OTHER, status=403)
    api.delete(URL + '/' + item['uuid'], status=204,
               headers=dict(MEMBER, Accept='application/json'))
    assert api.get(URL + '/' + item['uuid'],
                   headers=ADMIN).json['attachments'] == []
    api.get('/v2/accelerator_requests/' + attached['arq_uuid'],
            headers=ADMIN, status=404)
    assert _reserved(placement, item) == (0, 16)
    resp = api.delete(URL + '/' + item['uuid'], headers=ADMIN, status=409)
    assert 'not attached' in fault(resp)['faultstring']


def test_another_projects_attachment_shows_only_that_it_is_in_use(api,
                                                                 node):
    item = node['item']
    one = URL + '/' + item['uuid']
    api.put_json(one, {'instance_uuid': INSTANCE}, headers=MEMBER)
    details = {'instance_uuid', 'arq_uuid', 'project_id'}
    for headers in (MEMBER, ADMIN):
        (mine,) = api.get(one, headers=headers).json['attachments']
        assert details <= set(mine)
        (listed,) = [i for i in api.get(URL, headers=headers).json[
            'accelerator'] if i['uuid'] == item['uuid']]
        assert listed['attachments'] == [mine]
    (theirs,) = api.get(one, headers=OTHER).json['attachments']
    assert theirs == {'type': 'instance', 'state': 'attached', 'via': 'v1'}
    (listed,) = [i for i in api.get(URL, headers=OTHER).json['accelerator']
                 if i['uuid'] == item['uuid']]
    assert listed['attachments'] == [theirs]
    api.delete(one, headers=MEMBER, status=204)


def test_detach_refused_while_placement_holds_allocations(api, node,
                                                          placement):
    item = node['item']
    provider = placement.subtree('node1')[item['name']]['uuid']
    consumer = placement.allocate(provider, 'FPGA', 1)
    resp = api.put_json(URL + '/' + item['uuid'],
                        {'instance_uuid': INSTANCE}, headers=ADMIN,
                        status=409)
    assert consumer in fault(resp)['faultstring']
    assert _reserved(placement, item) == (0, 16)
    assert api.get(URL + '/' + item['uuid'],
                   headers=ADMIN).json['attachments'] == []
    resp = api.delete(URL + '/' + item['uuid'], headers=ADMIN, status=409)
    assert 'Placement holds allocations' in fault(resp)['faultstring']
    placement.free(consumer)


def test_attach_body_is_checked(api, node):
    uuid = node['item']['uuid']
    for body in ({}, {'instance_uuid': 'x'}, {'host': ''},
                 {'instance_uuid': INSTANCE, 'host': 'node1'},
                 {'instance_uuid': INSTANCE, 'uuid': INSTANCE},
                 {'instance_uuid': INSTANCE, 'size': 1}):
        api.put_json(URL + '/' + uuid, body, headers=ADMIN, status=400)


def test_host_attach_of_a_driver_without_it_is_refused(api, node,
                                                       placement):
    item = node['item']
    resp = api.put_json(URL + '/' + item['uuid'], {'host': 'node1'},
                        headers=ADMIN, status=400)
    assert 'attach_host' in fault(resp)['faultstring']
    assert _reserved(placement, item) == (0, 16)
    api.put_json(URL + '/' + item['uuid'], {'host': 'node2'},
                 headers=ADMIN, status=404)
    api.put_json(URL + '/' + item['uuid'], {'host': 'node1'},
                 headers=MEMBER, status=403)


def test_remote_accelerator_attaches_to_instance_and_host(api, node):
    api.post_json(URL, {'name': 'rack-fpga'}, headers=ADMIN, status=201)
    uuid = [a for a in api.get(URL, headers=ADMIN).json['accelerator']
            if a['name'] == 'rack-fpga'][0]['uuid']
    resp = api.put_json(URL + '/' + uuid, {'instance_uuid': INSTANCE},
                        headers=ADMIN)
    arq = resp.json['attachments'][0]['arq_uuid']
    assert api.get('/v2/accelerator_requests/' + arq,
                   headers=ADMIN).json['state'] == 'Bound'
    api.delete(URL + '/' + uuid, headers=ADMIN, status=204)
    resp = api.put_json(URL + '/' + uuid, {'host': 'node1'}, headers=ADMIN)
    assert resp.json['attachments'][0]['host'] == 'node1'
    api.put_json(URL + '/' + uuid, {'host': 'node1'}, headers=ADMIN,
                 status=409)
    api.delete(URL + '/' + uuid, headers=ADMIN, status=204)


def test_member_detach_of_an_unattached_accelerator_says_why(api, node):
    resp = api.delete(URL + '/' + node['item']['uuid'], headers=MEMBER,
                      status=409)
    assert 'not attached' in fault(resp)['faultstring']
    resp = api.put_json(URL + '/' + node['item']['uuid'],
                        {'instance_uuid': INSTANCE, 'host': 'node1'},
                        headers=ADMIN, status=400)
    assert 'not both' in fault(resp)['faultstring']
    api.get(URL + '?limit=1', headers=ADMIN, status=400)


@pytest.mark.parametrize('options', ['SINGLE_BACKEND_OPTIONS',
                                     'AGENT_OPTIONS'])
def test_generic_driver_attach_flow(api, stack, placement, override,
                                    tmp_path, options):
    """The generic driver on a single- and on a multi-backend host: every
    unit it reports attaches to the host (bound to the backend's host
    driver) and to an instance, and detaches."""
    sysfs = tmp_path / 'sys'
    shutil.copytree(pci_hosts.committed(generic_host.NAME), sysfs,
                    symlinks=True)
    test_generic._configure(override, getattr(generic_host, options))
    override('sysfs_root', str(sysfs), group='agent')
    override('auto_activate_new_devices', True, group='conductor')
    expected = (generic_host.SINGLE_BACKEND_EXPECTED
                if options == 'SINGLE_BACKEND_OPTIONS'
                else generic_host.EXPECTED)
    with pci_hosts.privsep_in_process():
        agent = stack('node1', placement=placement)
        agent.report()
        units = api.get(URL, headers=ADMIN).json['accelerator']
        assert sorted(u['acc_specs']['device_type'] for u in units) == \
            sorted(expected)
        for unit in units:
            one = URL + '/' + unit['uuid']
            attached = api.put_json(one, {'host': 'node1'}, headers=ADMIN)
            assert attached.json['attachments'][0]['host'] == 'node1'
            assert _reserved_rc(placement, unit) == 'all'
            api.delete(one, headers=ADMIN, status=204)
            api.put_json(one, {'instance_uuid': INSTANCE}, headers=ADMIN)
            api.delete(one, headers=ADMIN, status=204)
            assert _reserved_rc(placement, unit) == 'none'
    crypto = sysfs / 'bus' / 'pci' / 'devices' / generic_host.CRYPTO_VFS[0]
    assert (crypto / 'driver_override').read_text().strip() == 'vfio-pci'


def _reserved_rc(placement, unit):
    (inv,) = placement.subtree('node1')[unit['name']]['inventories'].values()
    return {0: 'none', inv['total']: 'all'}.get(inv['reserved'], 'some')
