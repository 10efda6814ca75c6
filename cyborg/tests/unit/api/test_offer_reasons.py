"""Offer reasons in the API (2.10): a device that offers nothing says why.

A real conductor records what a real agent's NVIDIA driver found on the
simulated nvidia-host, with nvidia-223 enabled: the T4 holding a vGPU of
nvidia-222 offers nothing.
"""

from oslo_config import cfg
import pytest
import sqlalchemy as sa

from cyborg.api.types import device as device_types
from cyborg.api.types import link
from cyborg.conductor import explain
from cyborg.conf import gpu as gpu_conf
from cyborg.db import models
from cyborg.objects import device as device_obj
from cyborg.tests.fixtures import nvidia_hosts as nv
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.conductor import test_explain as fakes

CONF = cfg.CONF
REASON = ('it holds vGPUs of nvidia-222, which [gpu_devices] '
          'enabled_vgpu_types does not enable, and they leave no room for '
          'the enabled nvidia-223: enable nvidia-222 as well, or remove the '
          'vGPUs')
MANAGER = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p-tenant',
           'X-User-Id': 'u-tenant'}


def _v(version, headers=ADMIN):
    return dict(headers, **{'OpenStack-API-Version': 'accelerator %s'
                            % version})


@pytest.fixture
def gpus(stack, api, override):
    override('sysfs_root', pci_hosts.committed(nv.NAME), group='agent')
    override('enabled_drivers', ['nvidia_gpu_driver'], group='agent')
    override('enabled_vgpu_types', ['nvidia-223'], group='gpu_devices')
    gpu_conf.register_dynamic_opts(CONF)
    stack('node1').report()
    return api


def _by_uuid(api, version):
    return {d['uuid']: d for d in api.get(
        '/v2/devices', headers=_v(version)).json['devices']}


def test_status_reason_says_why_a_device_offers_nothing_from_2_10(gpus):
    listed = _by_uuid(gpus, '2.10')
    assert len(listed) == 5
    reasons = {uuid: d['status_reason'] for uuid, d in listed.items()
               if d['status_reason']}
    ((busy, reason),) = reasons.items()
    assert reason == REASON
    one = gpus.get('/v2/devices/%s' % busy, headers=_v('2.10')).json
    assert one == listed[busy]
    # 2.9 (and every version before) shows the lifecycle's reason alone;
    # nothing else differs.
    before = _by_uuid(gpus, '2.9')
    assert before[busy]['status_reason'] is None
    assert {uuid: dict(d, status_reason=None) for uuid, d in listed.items()
            } == before
    assert gpus.get('/v2/devices/%s' % busy, headers=_v('2.9')).json == (
        before[busy])


def test_a_reason_of_the_lifecycle_comes_first(gpus, db):
    busy = next(uuid for uuid, d in _by_uuid(gpus, '2.10').items()
                if d['status_reason'])
    with db.begin() as conn:
        conn.execute(sa.update(models.Device)
                     .where(models.Device.uuid == busy)
                     .values(status='maintaining',
                             status_reason='maintenance; was inactive'))
    for version in ('2.9', '2.10'):
        assert _by_uuid(gpus, version)[busy]['status_reason'] == (
            'maintenance; was inactive')
        assert gpus.get('/v2/devices/%s' % busy,
                        headers=_v(version)).json['status_reason'] == (
            'maintenance; was inactive')


def test_candidates_list_the_devices_offering_nothing_from_2_10(
        gpus, monkeypatch):
    placement = fakes.FakePlacement()
    real = explain.explain
    monkeypatch.setattr(explain, 'explain', lambda *a, **k: real(
        *a, client=placement))
    gpus.post_json('/v2/device_profiles', [
        {'name': 'vgpu', 'groups': [{'resources:VGPU': '1'}]}],
        headers=ADMIN)
    url = '/v2/device_profiles/vgpu/candidates'
    (group,) = gpus.get(url, headers=_v('2.10', MANAGER)).json['groups']
    offering_nothing = [c for c in group['candidates']
                        if c['reason'] == 'device_offers_nothing']
    assert [(c['deployable_uuid'], c['hostname'], c['detail'])
            for c in offering_nothing] == [(None, 'node1', REASON)]
    assert group['candidates'][-1] == offering_nothing[0]
    # 2.8 and 2.9 answer as before 2.10: deployables only.
    for version in ('2.8', '2.9'):
        (old,) = gpus.get(url, headers=_v(version, MANAGER)).json['groups']
        assert old['candidates'] == group['candidates'][:-1]


def test_a_conductor_older_than_device_1_5(ctx, monkeypatch):
    """Its objects and list rows carry no offer reason: 2.10 shows the
    lifecycle's reason alone."""
    # NOTE(tests): no request is served here; links need none.
    monkeypatch.setattr(link, 'resource_links', lambda *a, **k: [])
    monkeypatch.setattr(link, 'public_url', lambda: 'http://localhost')
    device = device_obj.Device(
        ctx, uuid='1c7e5e55-2b0c-4a57-9f4d-3b9c0f2e6a11', type='GPU',
        vendor='0x10de', model='NVIDIA GPU 0x1eb8', std_board_info='{}',
        vendor_board_info='{}', hostname='node1', status='inactive',
        status_reason=None, services=[], health='ok', health_reason=None,
        health_sources=[], mode=None, modes=[], offer_reason=REASON,
        created_at=None, updated_at=None)
    view = device_types.VIEWS(device_types.microversion._version('2.10'))
    primitive = device.obj_to_primitive(target_version='1.4')
    old = device_obj.Device.obj_from_primitive(primitive)
    assert not old.obj_attr_is_set('offer_reason')
    assert device_types.Device.from_object(old, view).status_reason is None
    assert device_types.Device.from_object(
        device, view).status_reason == REASON
    rows = device_obj.base.view_rows([device], [
        name for name in device_obj.Device.VIEW_FIELDS
        if name != 'offer_reason'])
    (item,) = device_types.list_body(rows, view)['devices']
    assert item['status_reason'] is None
    # A conductor of today's: the reason, never a field of its own.
    rows = device_obj.base.view_rows([device],
                                     device_obj.Device.VIEW_FIELDS)
    (item,) = device_types.list_body(rows, view)['devices']
    assert item['status_reason'] == REASON
    assert 'offer_reason' not in item
