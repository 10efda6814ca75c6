"""Why a device profile cannot be scheduled, on a real deployment.

cyborg-api, -conductor and -agent run over RabbitMQ and MariaDB with a
real Placement. The agent runs the fake driver (four FPGA cards of two
units each) and the generic PCI driver on a copy of the simulated
``pci-host``. The test puts deployables into one unschedulable situation
after another, each the way it happens in a cloud (an operator's disable
and drain, an instance's allocation in Placement, a fatal PCIe error in
sysfs, a project at its limit, an agent that stops), and checks the first
reason GET /v2/device_profiles/{name}/candidates gives for each.
"""

import os
import sys
import uuid

import pytest
import requests

from cyborg import embedded_placement
from cyborg.tests import deployments
from cyborg.tests import faults
from cyborg.tests import processes
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.functional import test_device_health as health

pytestmark = pytest.mark.functional

TIMEOUT = 60
FAKE_DEVICES = 4
ADDRESS = health.ADDRESS
ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
         'X-User-Id': 'operator'}
MANAGER = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p-tenant',
           'X-User-Id': 'u-tenant'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-tenant',
          'X-User-Id': 'u-member'}
NOVA = dict(MEMBER, **{'X-Service-Roles': 'service'})
V28 = {'OpenStack-API-Version': 'accelerator 2.8'}
ARQS = '/v2/accelerator_requests'
PROFILES = {
    'fpga': {'resources:FPGA': '1'},
    'vgpu': {'resources:VGPU': '1'},
    'fpga-nope': {'resources:FPGA': '1', 'trait:CUSTOM_NOPE': 'required'},
    'fpga-not-fake': {'resources:FPGA': '1',
                      'trait:CUSTOM_FAKE_DEVICE': 'forbidden'},
    'pci': {'resources:CUSTOM_PCI': '1'},
}
PRIVSEP_HELPER = os.path.join(os.path.dirname(sys.executable),
                              'privsep-helper')


def _call(deployment, method, path, status, headers=ADMIN, **kwargs):
    resp = requests.request(method, deployment.url + path, headers=headers,
                            timeout=TIMEOUT, **kwargs)
    assert resp.status_code == status, resp.text
    return resp.json() if resp.content else None


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('explain')
    root = pci_hosts.copy_host('pci-host', tmp / 'sysfs')
    health.write_healthy_aer(root)
    sections = {
        'agent': {'enabled_drivers': 'fake_driver,pci_driver',
                  'sysfs_root': root, 'report_interval': 1},
        'pci': {'device_spec': '{"address": "%s"}' % ADDRESS},
        'conductor': {'auto_activate_new_devices': True,
                      'health_interval': 1},
        'quota': {'limits': 'FPGA:2'},
        'cyborg_sys_admin': {'helper_command': PRIVSEP_HELPER},
    }
    with deployments.services(tmp, handles=2, devices=FAKE_DEVICES,
                              sections=sections) as found:
        found.sysfs = root
        found.placement = embedded_placement.client_for(found.placement_url)
        processes.wait_for(
            lambda: _ready(found), TIMEOUT, interval=0.2,
            what='every device ready and in Placement')
        # NOTE(tests): one profile per request, as upstream's API takes.
        for name, group in PROFILES.items():
            _call(found, 'POST', '/v2/device_profiles', 201,
                  json=[{'name': name, 'groups': [group]}])
        yield found


def _ready(deployment):
    devices = _call(deployment, 'GET', '/v2/devices', 200,
                    headers=dict(ADMIN, **V28))['devices']
    deployables = _call(deployment, 'GET', '/v2/deployables', 200)[
        'deployables']
    return (len(devices) == FAKE_DEVICES + 1 and
            all(d['status'] == 'ready' for d in devices) and
            len(deployables) == FAKE_DEVICES + 1 and
            all(d['rp_uuid'] for d in deployables))


def _explain(deployment, profile, headers=MANAGER, query=''):
    return _call(deployment, 'GET', '/v2/device_profiles/%s/candidates%s'
                 % (profile, query), 200, headers=dict(headers, **V28))


def _reasons(body, group=0):
    """{deployable name: (reason, detail)} of one group."""
    return {c['deployable_name']: (c['reason'], c['detail'])
            for c in body['groups'][group]['candidates']}


def _fakes(body):
    """The fake deployables' candidates, by name."""
    return sorted((c for c in body['groups'][0]['candidates']
                   if c['resource_class'] == 'FPGA'),
                  key=lambda c: c['deployable_name'])


def test_every_healthy_fpga_can_serve_at_first(cloud):
    body = _explain(cloud, 'fpga')
    assert body['device_profile']['name'] == 'fpga'
    assert body['project_id'] == 'p-tenant'
    (group,) = body['groups']
    assert (group['resources'], group['required']) == ({'FPGA': 1}, [])
    fakes = _fakes(body)
    assert len(fakes) == FAKE_DEVICES
    assert all(c['schedulable'] and c['reason'] is None for c in fakes)
    (pci,) = [c for c in group['candidates']
              if c['resource_class'] == 'CUSTOM_PCI']
    assert not pci['schedulable']
    assert pci['reason'] == 'resource_class'
    assert pci['detail'] == ('it offers CUSTOM_PCI; the group asks for '
                             'FPGA')


def test_a_class_nobody_offers(cloud):
    body = _explain(cloud, 'vgpu')
    assert {c['reason'] for c in body['groups'][0]['candidates']} == {
        'resource_class'}


def test_a_missing_and_a_forbidden_trait(cloud):
    for name, reason, detail in (
            ('fpga-nope', 'trait_missing', 'it lacks CUSTOM_NOPE'),
            ('fpga-not-fake', 'trait_forbidden',
             'it has CUSTOM_FAKE_DEVICE')):
        body = _explain(cloud, name)
        assert {(c['reason'], c['detail']) for c in _fakes(body)} == {
            (reason, detail)}, name


def _allocate(cloud, rp_uuid, amount):
    """An instance's allocation in Placement, as Nova's scheduler makes."""
    consumer = str(uuid.uuid4())
    resp = requests.put(
        '%s/allocations/%s' % (cloud.placement_url, consumer),
        headers={'X-Auth-Token': embedded_placement.ADMIN_TOKEN,
                 'OpenStack-API-Version': 'placement 1.26'},
        json={'allocations': {rp_uuid: {'resources': {'FPGA': amount}}},
              'project_id': 'p-other', 'user_id': 'u-other'},
        timeout=TIMEOUT)
    assert resp.status_code == 204, resp.text
    return consumer


def _bind(cloud, rp_uuid):
    arqs = _call(cloud, 'POST', ARQS, 201, headers=MEMBER,
                 json={'device_profile_name': 'fpga'})['arqs']
    instance = str(uuid.uuid4())
    _call(cloud, 'PATCH', ARQS, 202, headers=NOVA, json={
        arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': cloud.host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        for arq in arqs})
    processes.wait_for(
        lambda: _call(cloud, 'GET', ARQS + '?instance=' + instance, 200,
                      headers=MEMBER)['arqs'][0]['state'] == 'Bound',
        TIMEOUT, interval=0.1, what='the ARQ to be bound')


def test_each_situation_gives_its_first_reason(cloud):
    first, second, third, fourth = _fakes(_explain(cloud, 'fpga'))

    # an operator takes a card out of service
    resp = requests.post(
        cloud.url + '/v2/devices/%s/disable' % first['device_uuid'],
        headers=dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.3'}),
        timeout=TIMEOUT)
    assert resp.status_code in (200, 204), resp.text
    # an instance holds a unit of the second card, which is then drained
    _bind(cloud, second['rp_uuid'])
    _call(cloud, 'POST', '/v2/devices/%s/drain' % second['device_uuid'],
          200, headers=dict(ADMIN, **{'OpenStack-API-Version':
                                      'accelerator 2.6'}))
    # an instance took both units of the third in Placement
    _allocate(cloud, third['rp_uuid'], 2)
    # the tenant holds two FPGAs (the bound one and one more): its limit
    _call(cloud, 'POST', ARQS, 201, headers=MEMBER,
          json={'device_profile_name': 'fpga'})
    # the PCI card reports a fatal PCIe error
    health.fatal(cloud.sysfs, 1)
    processes.wait_for(
        lambda: _reasons(_explain(cloud, 'pci'))[_pci_name(cloud)][0] ==
        'health_failed', TIMEOUT, interval=0.2,
        what='the PCI card to fail')

    reasons = _reasons(_explain(cloud, 'fpga'))
    assert reasons[first['deployable_name']][0] == 'device_not_ready'
    assert reasons[first['deployable_name']][1].startswith(
        'its device is maintaining')
    assert reasons[second['deployable_name']] == (
        'draining', 'draining: 1 accelerator request still bound')
    assert reasons[third['deployable_name']] == (
        'no_capacity', 'used 2 of 2 (0 reserved); the group asks for 1')
    assert reasons[fourth['deployable_name']] == (
        'quota_exhausted', 'class:FPGA: limit 2, the project uses 2 and '
                           'asks for 1')
    pci_reason = _reasons(_explain(cloud, 'pci'))[_pci_name(cloud)]
    assert pci_reason[0] == 'health_failed'
    assert 'fatal' in pci_reason[1].lower()

    # another project is not at its limit: the fourth card serves it
    admin = _reasons(_explain(cloud, 'fpga', headers=ADMIN))
    assert admin[fourth['deployable_name']] == (None, None)
    # an aggregate the host is not in: Placement offers nothing there
    aggregate = str(uuid.uuid4())
    body = _explain(cloud, 'fpga', headers=ADMIN,
                    query='?member_of=in:%s' % aggregate)
    assert body['member_of'] == 'in:%s' % aggregate
    assert _reasons(body)[fourth['deployable_name']] == (
        'not_offered', 'Placement offers no allocation on it for this group '
                       '(member_of=in:%s)' % aggregate)

    # the host's agent stops reporting
    agent = cloud.process('cyborg-agent')
    agent.signal()
    processes.wait_for(lambda: not agent.alive(), TIMEOUT,
                       what='the agent to stop')
    processes.wait_for(
        lambda: _reasons(_explain(cloud, 'fpga', headers=ADMIN))[
            fourth['deployable_name']][0] == 'agent_down', TIMEOUT,
        interval=0.5, what='the agent to be seen down')
    final = _reasons(_explain(cloud, 'fpga', headers=ADMIN))
    assert final[fourth['deployable_name']][1] == (
        'the cyborg-agent of %s does not report' % cloud.host)
    # the other situations still come first on their cards
    assert final[first['deployable_name']][0] == 'device_not_ready'
    assert final[second['deployable_name']][0] == 'draining'
    shown = [reasons, admin, final, _reasons(body)] + [
        _reasons(_explain(cloud, name)) for name in (
            'vgpu', 'fpga-nope', 'fpga-not-fake', 'pci')]
    distinct = {reason for found in shown
                for reason, _detail in found.values() if reason}
    print('distinct reasons shown: %s' % ', '.join(sorted(distinct)))
    assert distinct == {
        'resource_class', 'trait_missing', 'trait_forbidden',
        'health_failed', 'draining', 'device_not_ready', 'agent_down',
        'no_capacity', 'quota_exhausted', 'not_offered'}


def _pci_name(cloud):
    (name,) = [c['deployable_name'] for c in
               _explain(cloud, 'pci')['groups'][0]['candidates']
               if c['resource_class'] == 'CUSTOM_PCI']
    return name


def test_errors(cloud):
    resp = requests.get(
        cloud.url + '/v2/device_profiles/no-such/candidates',
        headers=dict(MANAGER, **V28), timeout=TIMEOUT)
    assert resp.status_code == 404, resp.text
    resp = requests.get(
        cloud.url + '/v2/device_profiles/fpga/candidates?member_of=x',
        headers=dict(MANAGER, **V28), timeout=TIMEOUT)
    assert resp.status_code == 400, resp.text
    assert 'member_of' in faults.fault_of(resp.json())['faultstring']
    # a member may not see hardware inventory
    resp = requests.get(cloud.url + '/v2/device_profiles/fpga/candidates',
                        headers=dict(MEMBER, **V28), timeout=TIMEOUT)
    assert resp.status_code == 403, resp.text
    resp = requests.get(
        cloud.url + '/v2/device_profiles/fpga/candidates',
        headers=dict(MANAGER, **{'OpenStack-API-Version':
                                 'accelerator 2.7'}), timeout=TIMEOUT)
    assert resp.status_code == 404, resp.text
