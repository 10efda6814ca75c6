"""Offer reasons end to end: a device that offers nothing says why (2.10).

cyborg-api, -conductor and -agent run over RabbitMQ and MariaDB with a
real Placement; the agent runs the NVIDIA GPU driver, with nvidia-223
enabled, on a host built with the simulated ``nvidia-host``'s builders: a
T4 holding one vGPU of nvidia-222 made outside Cyborg (which leaves no
room for nvidia-223: the T4 offers nothing), an idle T4, and an A100 two
of whose VFs hold vGPUs of nvidia-471, a type no option selects for it
(so it is in that type's mode and offers the rest of it).
"""

import json

import pytest
import requests
import sqlalchemy as sa

from cyborg.tests import deployments
from cyborg.tests import processes
from cyborg.tests.fixtures import nvidia_hosts

pytestmark = pytest.mark.functional

TIMEOUT = 60
ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
         'X-User-Id': 'operator'}
BUSY_T4 = nvidia_hosts.T4_BUSY
FRESH_T4 = nvidia_hosts.T4_FRESH
A100 = nvidia_hosts.A100_PF
REASON = ('it holds vGPUs of nvidia-222, which [gpu_devices] '
          'enabled_vgpu_types does not enable, and they leave no room for '
          'the enabled nvidia-223: enable nvidia-222 as well, or remove the '
          'vGPUs')


def _v(version):
    return dict(ADMIN, **{'OpenStack-API-Version': 'accelerator %s'
                          % version})


def _build_host(root):
    b = nvidia_hosts.Builder(root)
    nvidia_hosts.t4(b, BUSY_T4, 32, vgpus=1, gpu_index=0)
    nvidia_hosts.t4(b, FRESH_T4, 45, gpu_index=2)
    nvidia_hosts.a100(b, A100, 120, vgpus={0: 'nvidia-471',
                                           1: 'nvidia-471'})
    return root


def _call(cloud, path, version, status=200):
    resp = requests.get(cloud.url + path, headers=_v(version),
                        timeout=TIMEOUT)
    assert resp.status_code == status, resp.text
    return resp.json()


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


def _settled(cloud):
    devices = _call(cloud, '/v2/devices', '2.10')['devices']
    deployables = _call(cloud, '/v2/deployables', '2.10')['deployables']
    return (len(devices) == 3 and
            all(d['status'] == 'ready' for d in devices) and
            len(deployables) == 2 and
            all(d['rp_uuid'] for d in deployables))


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('offers')
    root = _build_host(str(tmp / 'sysfs'))
    sections = {
        'agent': {'enabled_drivers': 'nvidia_gpu_driver',
                  'sysfs_root': root, 'report_interval': 1},
        'conductor': {'auto_activate_new_devices': True},
        'gpu_devices': {'enabled_vgpu_types': 'nvidia-223'},
    }
    with deployments.services(tmp, sections=sections) as found:
        processes.wait_for(lambda: _settled(found), TIMEOUT, interval=0.2,
                           what='every GPU ready, its deployables in '
                                'Placement')
        found.uuids = _uuids_by_address(found)
        yield found


def test_a_device_that_offers_nothing_says_why_from_2_10(cloud):
    busy = cloud.uuids[BUSY_T4]
    shown = _call(cloud, '/v2/devices/%s' % busy, '2.10')
    assert (shown['status'], shown['status_reason']) == ('ready', REASON)
    listed = {d['uuid']: d for d in _call(cloud, '/v2/devices',
                                          '2.10')['devices']}
    assert listed[busy] == shown
    # The others offer something: no reason.
    assert {uuid: d['status_reason'] for uuid, d in listed.items()
            if uuid != busy} == {cloud.uuids[FRESH_T4]: None,
                                 cloud.uuids[A100]: None}
    # 2.9 answers as it always did.
    old = _call(cloud, '/v2/devices/%s' % busy, '2.9')
    assert old == dict(shown, status_reason=None)
    assert {d['uuid']: d for d in _call(cloud, '/v2/devices', '2.9')[
        'devices']}[busy] == old


def test_a_gpu_holding_vgpus_of_one_type_offers_the_rest_of_it(cloud):
    a100 = _call(cloud, '/v2/devices/%s' % cloud.uuids[A100], '2.10')
    assert a100['mode'] == 'sriov-vgpu:nvidia-471'
    (dep,) = [d for d in _call(cloud, '/v2/deployables', '2.10')[
        'deployables'] if d['name'].endswith('_%s_nvidia-471' % A100)]
    # NOTE(tests): 16 VFs, a 40 GB A100 holds at most 10 A100-4C; the two
    # that exist count.
    assert dep['num_accelerators'] == 10


def test_candidates_list_it_from_2_10(cloud):
    resp = requests.post(cloud.url + '/v2/device_profiles', headers=ADMIN,
                         timeout=TIMEOUT, json=[{
                             'name': 'vgpu',
                             'groups': [{'resources:VGPU': '1'}]}])
    assert resp.status_code == 201, resp.text
    path = '/v2/device_profiles/vgpu/candidates'
    (group,) = _call(cloud, path, '2.10')['groups']
    *deployables, last = group['candidates']
    assert all(c['deployable_uuid'] for c in deployables)
    assert last == {
        'deployable_uuid': None, 'deployable_name': None,
        'device_uuid': cloud.uuids[BUSY_T4], 'hostname': cloud.host,
        'resource_class': None, 'rp_uuid': None, 'schedulable': False,
        'reason': 'device_offers_nothing', 'detail': REASON}
    (old,) = _call(cloud, path, '2.9')['groups']
    assert old['candidates'] == deployables
