"""``GET /v2/devices`` and ``GET /v2/devices/{uuid}``."""

import re

from oslo_utils import uuidutils
import pytest

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header

FIELDS = ['uuid', 'type', 'vendor', 'model', 'std_board_info',
          'vendor_board_info', 'hostname', 'created_at', 'updated_at',
          'links']
TIMESTAMP = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$')


def _get(api, path, version=None, **kwargs):
    headers = dict(ADMIN)
    if version is not None:
        headers.update(version_header(version))
    return api.get(path, headers=headers, **kwargs)


def test_list_shape(api, make_device):
    device = make_device()
    body = _get(api, '/v2/devices').json
    assert list(body) == ['devices']
    [shown] = body['devices']
    assert sorted(shown) == sorted(FIELDS)
    assert shown['uuid'] == device.uuid
    assert shown['type'] == 'FPGA'
    assert shown['vendor'] == '0xABCD'
    assert shown['model'] == 'miss model info'
    assert shown['std_board_info'] == device.std_board_info
    assert shown['vendor_board_info'] == 'fake_vendor_info'
    assert shown['hostname'] == 'computenode'
    assert TIMESTAMP.match(shown['created_at'])
    assert shown['updated_at'] is None
    assert shown['links'] == [
        {'href': 'http://localhost/v2/devices/%s' % device.uuid,
         'rel': 'self'}]


def test_list_empty(api):
    assert _get(api, '/v2/devices').json == {'devices': []}


def test_get_one_shape(api, make_device):
    device = make_device()
    shown = _get(api, '/v2/devices/%s' % device.uuid).json
    assert sorted(shown) == sorted(FIELDS)
    assert shown['uuid'] == device.uuid


@pytest.mark.parametrize('version', ['accelerator 2.3', '2.3'])
@pytest.mark.parametrize('status, shown_as', [
    ('ready', 'enabled'), ('maintaining', 'maintaining'),
    ('inactive', 'maintaining'), ('activating', 'maintaining'),
    ('error', 'maintaining'), ('lost', 'maintaining')])
def test_upstream_status_at_2_3(api, make_device, version, status, shown_as):
    # upstream's two values, which clients written for 2.3 compare against
    device = make_device(status=status)
    [listed] = _get(api, '/v2/devices', version).json['devices']
    shown = _get(api, '/v2/devices/%s' % device.uuid, version).json
    assert listed['status'] == shown_as
    assert shown['status'] == shown_as


@pytest.mark.parametrize('version', ['latest', 'accelerator 2.4'])
def test_lifecycle_status_from_2_4(api, make_device, version):
    device = make_device(status='inactive')
    [listed] = _get(api, '/v2/devices', version).json['devices']
    shown = _get(api, '/v2/devices/%s' % device.uuid, version).json
    assert listed['status'] == shown['status'] == 'inactive'


@pytest.mark.parametrize('version', [None, 'accelerator 2.0',
                                     'accelerator 2.2'])
def test_no_status_before_2_3(api, make_device, version):
    device = make_device()
    [listed] = _get(api, '/v2/devices', version).json['devices']
    shown = _get(api, '/v2/devices/%s' % device.uuid, version).json
    assert 'status' not in listed
    assert 'status' not in shown


@pytest.mark.parametrize('query, expected', [
    ('type=GPU', ['gpu']),
    ('vendor=0x10de', ['gpu']),
    ('hostname=other', ['other']),
    ('type=FPGA&hostname=computenode', ['fpga']),
    ('filters.field=model&filters.value=A100', ['gpu']),
    ('filters.field=hostname&filters.value=computenode', ['fpga', 'gpu']),
    ('type=NIC', []),
])
def test_list_filters(api, make_device, query, expected):
    made = {
        'fpga': make_device(),
        'gpu': make_device(type='GPU', vendor='0x10de', model='A100'),
        'other': make_device(type='QAT', hostname='other'),
    }
    uuids = [d['uuid'] for d in
             _get(api, '/v2/devices?%s' % query).json['devices']]
    assert sorted(uuids) == sorted(made[name].uuid for name in expected)


@pytest.mark.parametrize('query, words', [
    ('foo=bar', ['foo', 'hostname']),
    ('filters.field=status&filters.value=ready', ['status']),
    ('filters.field=vendor', ['filters.value']),
    ('filters.value=x', ['filters.field']),
    ('type=GPU&filters.field=type&filters.value=FPGA', ['type']),
])
def test_bad_query_is_400(api, query, words):
    response = _get(api, '/v2/devices?%s' % query, expect_errors=True)
    assert response.status_int == 400
    message = fault(response)['faultstring']
    for word in words:
        assert word in message


def test_unknown_uuid_is_404(api):
    uuid = '359c0990-0258-44fd-8b05-fc510ac3d022'
    response = _get(api, '/v2/devices/%s' % uuid, expect_errors=True)
    assert response.status_int == 404
    assert fault(response) == {
        'faultcode': 'Client', 'debuginfo': None,
        'faultstring': 'Device %s could not be found.' % uuid}


def test_non_uuid_is_404(api):
    response = _get(api, '/v2/devices/not-a-uuid', version='2.12',
                    expect_errors=True)
    assert response.status_int == 404
    assert code(response) == 'cyborg.device.not_found'


HEALTH = ['health', 'health_reason', 'health_sources', 'health_checked_at',
          'affected_arqs']


@pytest.mark.parametrize('version', ['accelerator 2.4', 'accelerator 2.5'])
def test_no_health_before_2_6(api, make_device, version):
    device = make_device(health='failed', health_reason='too hot')
    [listed] = _get(api, '/v2/devices', version).json['devices']
    shown = _get(api, '/v2/devices/%s' % device.uuid, version).json
    for body in (listed, shown):
        assert not set(HEALTH) & set(body)


@pytest.mark.parametrize('version', ['latest', 'accelerator 2.6'])
def test_health_from_2_6(api, make_device, version):
    failed = make_device(health='failed', health_reason='AER: 1 fatal',
                         health_sources=['aer', 'pci'], status='error',
                         status_reason='unhealthy: AER: 1 fatal')
    never = make_device(hostname='other')
    listed = {d['uuid']: d for d in
              _get(api, '/v2/devices', version).json['devices']}
    for uuid in (failed.uuid, never.uuid):
        shown = _get(api, '/v2/devices/%s' % uuid, version).json
        assert {name: shown[name] for name in HEALTH} == {
            name: listed[uuid][name] for name in HEALTH}
    assert {name: listed[failed.uuid][name] for name in HEALTH} == {
        'health': 'failed', 'health_reason': 'AER: 1 fatal',
        'health_sources': ['aer', 'pci'],
        # No agent heartbeat recorded for its host.
        'health_checked_at': None, 'affected_arqs': []}
    assert {name: listed[never.uuid][name] for name in HEALTH} == {
        'health': 'unknown', 'health_reason': None, 'health_sources': [],
        'health_checked_at': None, 'affected_arqs': []}


def test_health_checked_at_is_the_agents_last_heartbeat(api, ctx,
                                                         make_device):
    from cyborg.db import api as dbapi
    device = make_device(health='ok', health_sources=['pci'])
    dbapi.services.heartbeat(ctx, 'computenode', 'cyborg-agent')
    seen = dbapi.services.get(ctx, 'computenode', 'cyborg-agent')
    shown = _get(api, '/v2/devices/%s' % device.uuid, '2.6').json
    assert shown['health_checked_at'] == (
        seen.last_seen_up.replace(microsecond=0).isoformat() + '+00:00')


def test_affected_arqs_are_those_the_caller_may_list(api, db, make_device,
                                                     make_deployable):
    # NOTE(tests): a project manager may read every device; the ARQs bound
    # to a draining one are other projects' business.
    import sqlalchemy as sa

    from cyborg.db import models
    device = make_device(health='failed', health_reason='too hot',
                         status='error')
    deployable = make_deployable(device=device)
    mine, theirs = (uuidutils.generate_uuid() for _ in range(2))
    with db.begin() as conn:
        dep_id = conn.execute(sa.select(models.Deployable.id).where(
            models.Deployable.uuid == deployable.uuid)).scalar()
        for uuid, project in ((mine, 'p1'), (theirs, 'p2')):
            conn.execute(sa.insert(models.AcceleratorRequest).values(
                uuid=uuid, state='Bound', device_profile_group_id=0,
                deployable_id=dep_id, project_id=project))
    manager = dict(version_header('latest'), **{
        'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p1',
        'X-User-Id': 'u1'})
    for path in ('/v2/devices', '/v2/devices/%s' % device.uuid):
        body = api.get(path, headers=manager).json
        shown = body['devices'][0] if 'devices' in body else body
        assert shown['affected_arqs'] == [mine]
    admin = _get(api, '/v2/devices/%s' % device.uuid, 'latest').json
    assert admin['affected_arqs'] == sorted([mine, theirs])
