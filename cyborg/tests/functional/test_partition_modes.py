"""Partition modes end to end: GPUs switched between passthrough and
vGPUs, their Placement inventory reshaped in one step.

cyborg-api, -conductor and -agent run over RabbitMQ and MariaDB with a
real Placement; the agent runs the NVIDIA GPU driver on a host built
with the simulated ``nvidia-host``'s own builders: a T4 whose vGPU types
live on its PF, an idle A100 whose types live on its SR-IOV VFs, an A100
two of whose VFs hold vGPUs (and offers the rest of their type), and a
Quadro RTX 6000. An instance holds the RTX 6000 throughout, through a
bound accelerator request and its allocation in Placement, as Nova leaves
them; no switch may touch it.
"""

import json
import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg import embedded_placement
from cyborg.drivers import report
from cyborg.tests import deployments
from cyborg.tests import faults
from cyborg.tests import processes
from cyborg.tests.fixtures import nvidia_hosts
from cyborg.tests.functional import test_api_samples
from cyborg.tests.functional import test_cli

pytestmark = pytest.mark.functional

TIMEOUT = 60
ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
         'X-User-Id': 'operator'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-tenant',
          'X-User-Id': 'u-tenant'}
NOVA = dict(MEMBER, **{'X-Service-Roles': 'service'})
V29 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.9'})
ARQS = '/v2/accelerator_requests'
PLACEMENT = {'X-Auth-Token': embedded_placement.ADMIN_TOKEN,
             'OpenStack-API-Version': 'placement 1.30'}
T4 = nvidia_hosts.T4_FRESH
A100 = nvidia_hosts.A100_PF
BUSY_A100 = '0000:3b:00.0'
RTX = nvidia_hosts.RTX


def _build_host(root):
    """The GPUs above, as the kernel shows them (the fixture's builders)."""
    b = nvidia_hosts.Builder(root)
    nvidia_hosts.t4(b, T4, 45, gpu_index=2)
    nvidia_hosts.a100(b, A100, 120)
    nvidia_hosts.a100(b, BUSY_A100, 200, gpu_index=0, numa_node=0,
                      vgpus={0: 'nvidia-471', 1: 'nvidia-471'})
    b.pci(RTX, *nvidia_hosts.RTX6000, nvidia_hosts.VGA,
          subsystem_device='0x12ba', revision='0xa1', driver='nvidia',
          numa_node=1, iommu_group=160)
    return root


def _call(cloud, method, path, status, headers=ADMIN, **kwargs):
    resp = requests.request(method, cloud.url + path, headers=headers,
                            timeout=TIMEOUT, **kwargs)
    assert resp.status_code == status, resp.text
    return resp.json() if resp.content else None


def _placement(cloud, method, path, status=200, **kwargs):
    resp = requests.request(method, cloud.placement_url + path,
                            headers=PLACEMENT, timeout=TIMEOUT, **kwargs)
    assert resp.status_code == status, resp.text
    return resp.json() if resp.content else None


def _uuids_by_address(cloud):
    """{PCI address of a GPU: its device uuid}, read from the database."""
    engine = sa.create_engine(cloud.db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT d.uuid, c.cpid_info FROM devices d JOIN '
                'controlpath_ids c ON c.device_id = d.id')).all()
    finally:
        engine.dispose()
    return {'%(domain)s:%(bus)s:%(device)s.%(function)s'
            % json.loads(info): device for device, info in rows}


def _device(cloud, address):
    return _call(cloud, 'GET', '/v2/devices/%s' % cloud.uuids[address],
                 200, headers=V29)


def _deployables(cloud, address):
    """The deployables of the GPU at ``address``, by name."""
    return {d['name']: d for d in _call(
        cloud, 'GET', '/v2/deployables', 200)['deployables']
        if '_%s' % address in d['name']}


def _inventory(cloud, rp_uuid):
    return _placement(cloud, 'GET', '/resource_providers/%s/inventories'
                      % rp_uuid)['inventories']


def _settled(cloud):
    devices = _call(cloud, 'GET', '/v2/devices', 200,
                    headers=V29)['devices']
    deployables = _call(cloud, 'GET', '/v2/deployables', 200)['deployables']
    return (devices and all(d['status'] == 'ready' for d in devices) and
            deployables and all(d['rp_uuid'] for d in deployables))


def _bind(cloud, profile, rp_uuid):
    """An ARQ of ``profile`` bound to a new instance on ``rp_uuid``, with
    the instance's allocation in Placement, as Nova makes both; the
    instance and the ARQ."""
    (arq,) = _call(cloud, 'POST', ARQS, 201, headers=MEMBER,
                   json={'device_profile_name': profile})['arqs']
    instance = str(uuid.uuid4())
    resource_class = 'PGPU' if profile == 'pgpu' else 'VGPU'
    _placement(cloud, 'PUT', '/allocations/%s' % instance, 204, json={
        'allocations': {rp_uuid: {'resources': {resource_class: 1}}},
        'project_id': 'p-tenant', 'user_id': 'u-tenant',
        'consumer_generation': None})
    _call(cloud, 'PATCH', ARQS, 202, headers=NOVA, json={arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': cloud.host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
    processes.wait_for(
        lambda: _call(cloud, 'GET', '%s/%s' % (ARQS, arq['uuid']), 200,
                      headers=MEMBER)['state'] == 'Bound',
        TIMEOUT, interval=0.1, what='the ARQ to be bound')
    return instance, arq['uuid']


def _release(cloud, instance, address):
    """Delete the instance's ARQs and allocation, as Nova does; wait for
    the GPU's scrub between tenants to end."""
    _call(cloud, 'DELETE', '%s?instance=%s' % (ARQS, instance), 204,
          headers=NOVA)
    _placement(cloud, 'DELETE', '/allocations/%s' % instance, 204)
    processes.wait_for(
        lambda: not any(d['cleaning'] for d in _call(
            cloud, 'GET', '/v2/deployables', 200, headers=V29)[
                'deployables'] if '_%s' % address in d['name']),
        TIMEOUT, interval=0.2, what='the scrub of %s' % address)


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('modes')
    root = _build_host(str(tmp / 'sysfs'))
    sections = {
        'agent': {'enabled_drivers': 'nvidia_gpu_driver',
                  'sysfs_root': root, 'report_interval': 1},
        'conductor': {'auto_activate_new_devices': True},
    }
    with deployments.services(tmp, sections=sections) as found:
        processes.wait_for(lambda: _settled(found), TIMEOUT, interval=0.2,
                           what='every GPU ready and in Placement')
        found.uuids = _uuids_by_address(found)
        for name, group in (('pgpu', {'resources:PGPU': '1'}),
                            ('vgpu', {'resources:VGPU': '1'})):
            _call(found, 'POST', '/v2/device_profiles', 201,
                  json=[{'name': name, 'groups': [group]}])
        (rtx,) = _deployables(found, RTX).values()
        found.rtx_rp = rtx['rp_uuid']
        found.instance, found.rtx_arq = _bind(found, 'pgpu', rtx['rp_uuid'])
        yield found


def _rtx_untouched(cloud):
    allocations = _placement(cloud, 'GET', '/allocations/%s'
                             % cloud.instance)['allocations']
    assert allocations == {cloud.rtx_rp: {
        'resources': {'PGPU': 1}, 'generation': allocations[
            cloud.rtx_rp]['generation']}}
    assert _call(cloud, 'GET', '%s/%s' % (ARQS, cloud.rtx_arq), 200,
                 headers=MEMBER)['state'] == 'Bound'


def test_each_gpu_shows_the_modes_its_hardware_offers(cloud):
    t4 = _device(cloud, T4)
    assert (t4['mode'], t4['modes']) == ('passthrough', [
        'passthrough', 'vgpu:nvidia-222', 'vgpu:nvidia-223',
        'vgpu:nvidia-230'])
    a100 = _device(cloud, A100)
    assert (a100['mode'], a100['modes']) == ('passthrough', [
        'passthrough', 'sriov-vgpu:nvidia-471', 'sriov-vgpu:nvidia-472',
        'sriov-vgpu:nvidia-474'])
    assert _device(cloud, RTX)['modes'] == ['passthrough']
    # NOTE(tests): vGPUs made outside Cyborg on two VFs, of a type no
    # option enables: the GPU is in that type's mode (it offered nothing
    # before offer reasons)
    busy = _device(cloud, BUSY_A100)
    assert busy['mode'] == 'sriov-vgpu:nvidia-471'
    assert 'sriov-vgpu:nvidia-471' in busy['modes']


def _switch(cloud, address, mode, status=200):
    return _call(cloud, 'POST', '/v2/devices/%s/mode'
                 % cloud.uuids[address], status, headers=V29,
                 json={'mode': mode})


def test_a_t4_becomes_time_sliced_vgpus_in_one_reshape(cloud):
    (old,) = _deployables(cloud, T4).values()
    assert _inventory(cloud, old['rp_uuid'])['PGPU']['total'] == 1

    switched = _switch(cloud, T4, 'vgpu:nvidia-222')
    assert (switched['mode'], switched['status']) == ('vgpu:nvidia-222',
                                                      'ready')
    (new,) = _deployables(cloud, T4).values()
    assert new['name'].endswith('_nvidia-222')
    assert new['num_accelerators'] == 16
    assert new['rp_uuid'] == report.provider_uuid(new['name'])
    inventory = _inventory(cloud, new['rp_uuid'])
    assert (set(inventory), inventory['VGPU']['total']) == ({'VGPU'}, 16)
    # reserved while the switch ran, offered once the device is ready
    processes.wait_for(
        lambda: _inventory(cloud, new['rp_uuid'])['VGPU']['reserved'] == 0,
        TIMEOUT, interval=0.2, what='the new vGPUs to be offered')
    _placement(cloud, 'GET', '/resource_providers/%s' % old['rp_uuid'],
               404)
    _rtx_untouched(cloud)
    # and back
    assert _switch(cloud, T4, 'passthrough')['mode'] == 'passthrough'
    (again,) = _deployables(cloud, T4).values()
    assert _inventory(cloud, again['rp_uuid'])['PGPU']['total'] == 1
    _placement(cloud, 'GET', '/resource_providers/%s' % new['rp_uuid'],
               404)
    _rtx_untouched(cloud)


def _switch_when_free(cloud, address, mode):
    """Switch once no other workflow holds the device: the scrub that the
    last unbind started claims it until it is done (a 409 meanwhile)."""
    def switched():
        resp = requests.post(
            cloud.url + '/v2/devices/%s/mode' % cloud.uuids[address],
            headers=dict(V29, **faults.WITH_CODES), json={'mode': mode},
            timeout=TIMEOUT)
        if resp.status_code == 409 and faults.code_of(
                resp.json()) == 'cyborg.device.claimed':
            return None
        assert resp.status_code == 200, resp.text
        return resp.json()
    return processes.wait_for(switched, TIMEOUT, interval=0.2,
                              what='the device to be free to switch')


def test_an_a100_becomes_vgpus_on_its_virtual_functions(cloud):
    switched = _switch(cloud, A100, 'sriov-vgpu:nvidia-471')
    assert switched['mode'] == 'sriov-vgpu:nvidia-471'
    (new,) = _deployables(cloud, A100).values()
    # NOTE(tests): 16 VFs, but a 40 GB A100 holds at most 10 A100-4C.
    assert new['num_accelerators'] == 10
    assert _inventory(cloud, new['rp_uuid'])['VGPU']['total'] == 10
    _rtx_untouched(cloud)


def test_a_gpu_in_use_does_not_switch_and_says_by_what(cloud):
    (t4,) = _deployables(cloud, T4).values()
    instance, arq = _bind(cloud, 'pgpu', t4['rp_uuid'])
    try:
        fault = _switch(cloud, T4, 'vgpu:nvidia-223', status=409)
        message = faults.fault_of(fault)['faultstring']
        assert message == (
            'Device %s cannot change its mode while accelerator requests '
            'are bound to it: %s.' % (cloud.uuids[T4], arq))
        assert _device(cloud, T4)['mode'] == 'passthrough'
    finally:
        _release(cloud, instance, T4)
    assert _switch_when_free(cloud, T4, 'vgpu:nvidia-223')['mode'] == (
        'vgpu:nvidia-223')
    _switch(cloud, T4, 'passthrough')


def test_a_gpu_that_holds_vgpus_does_not_switch(cloud):
    """The agent's own check: mediated devices no accelerator request
    accounts for (made by hand, or left by a crash)."""
    fault = _switch(cloud, BUSY_A100, 'passthrough', status=409)
    message = faults.fault_of(fault)['faultstring']
    assert message == (
        'Device %s still holds the mediated devices %s, %s; it cannot '
        'change its mode until they are removed.' % (
            cloud.uuids[BUSY_A100], nvidia_hosts.mdev_uuid(0, 0),
            nvidia_hosts.mdev_uuid(0, 1)))
    device = _device(cloud, BUSY_A100)
    assert (device['mode'], device['status']) == ('sriov-vgpu:nvidia-471',
                                                  'ready')


def test_a_refused_reshape_leaves_everything_as_it_was(cloud):
    """An allocation Cyborg does not know of (an instance Nova placed
    on the GPU's provider before Cyborg bound it) makes Placement refuse
    the reshape: the device stays in its mode, its provider and the
    allocation stay."""
    (t4,) = _deployables(cloud, T4).values()
    consumer = str(uuid.uuid4())
    _placement(cloud, 'PUT', '/allocations/%s' % consumer, 204, json={
        'allocations': {t4['rp_uuid']: {'resources': {'PGPU': 1}}},
        'project_id': 'p-other', 'user_id': 'u-other',
        'consumer_generation': None})
    try:
        fault = _switch(cloud, T4, 'vgpu:nvidia-222', status=409)
        message = faults.fault_of(fault)['faultstring']
        assert message.startswith(
            'Device %s could not change to the mode vgpu:nvidia-222: '
            % cloud.uuids[T4])
        device = _device(cloud, T4)
        assert (device['mode'], device['status']) == ('passthrough',
                                                      'ready')
        assert _deployables(cloud, T4) == {t4['name']: t4}
        assert _inventory(cloud, t4['rp_uuid'])['PGPU']['total'] == 1
        assert t4['rp_uuid'] in _placement(
            cloud, 'GET', '/allocations/%s' % consumer)['allocations']
    finally:
        _placement(cloud, 'DELETE', '/allocations/%s' % consumer, 204)
    _rtx_untouched(cloud)


def test_bad_requests(cloud):
    fault = _switch(cloud, T4, 'sriov-vgpu:nvidia-471', status=400)
    assert 'it offers passthrough, vgpu:nvidia-222' in faults.fault_of(
        fault)['faultstring']
    _call(cloud, 'POST', '/v2/devices/%s/mode' % cloud.uuids[T4], 404,
          headers=dict(ADMIN, **{'OpenStack-API-Version':
                                 'accelerator 2.8'}),
          json={'mode': 'passthrough'})


@pytest.fixture(scope='module')
def clis():
    return test_cli.build_cli_venvs()


@pytest.mark.parametrize('flavour', test_cli.FLAVOURS)
def test_the_cli_shows_and_switches_modes(cloud, clis, flavour):
    cli = test_cli.Cli(flavour, clis[flavour], cloud.url)
    uuid_ = cloud.uuids[T4]
    shown = cli.json('accelerator', 'device', 'mode', 'show', uuid_)
    assert (shown['mode'], shown['modes']) == ('passthrough', [
        'passthrough', 'vgpu:nvidia-222', 'vgpu:nvidia-223',
        'vgpu:nvidia-230'])
    switched = cli.json('accelerator', 'device', 'mode', 'set', uuid_,
                        'vgpu:nvidia-230')
    assert (switched['mode'], switched['status']) == ('vgpu:nvidia-230',
                                                      'ready')
    (new,) = _deployables(cloud, T4).values()
    assert _inventory(cloud, new['rp_uuid'])['VGPU']['total'] == 4
    back = cli.json('accelerator', 'device', 'mode', 'set', uuid_,
                    'passthrough')
    assert back['mode'] == 'passthrough'
    refused = cli.run('accelerator', 'device', 'mode', 'set',
                      cloud.uuids[BUSY_A100], 'passthrough')
    assert refused.returncode == 1, test_cli.explain(cli, refused)
    assert 'still holds the mediated devices' in refused.stderr
    _rtx_untouched(cloud)


def test_the_api_reference_samples(cloud):
    """``POST /v2/devices/{uuid}/mode`` in the API reference, as this
    deployment answers it (the other samples come from
    test_api_samples, whose deployment has no GPU)."""
    api = test_api_samples.Api(cloud)
    api.role(cloud.uuids[T4], 'device-T4')
    api.call('POST', '/v2/devices/%s/mode' % cloud.uuids[T4], 200,
             {'mode': 'vgpu:nvidia-222'}, version='2.9',
             request_sample='devices-mode-req.json',
             sample='devices-mode-resp.json')
    assert sorted(api.samples.checked) == sorted(
        test_api_samples.PRODUCED_ELSEWHERE)
    assert not api.samples.drifted, '\n\n'.join(api.samples.drifted)
    _switch(cloud, T4, 'passthrough')
