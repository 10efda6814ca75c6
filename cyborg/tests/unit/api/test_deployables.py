"""``GET /v2/deployables`` and ``GET /v2/deployables/{uuid}``."""

import json

import pytest

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

FIELDS = ['uuid', 'parent_id', 'root_id', 'name', 'num_accelerators',
          'device_id', 'attributes_list', 'rp_uuid', 'driver_name',
          'bitstream_id', 'created_at', 'updated_at', 'links']
RP_UUID = '853f07a6-19de-3dd6-b9f6-6c782daa3f7b'


def _get(api, path, **kwargs):
    return api.get(path, headers=ADMIN, **kwargs)


def test_list_shape(api, make_device, make_deployable):
    device = make_device()
    deployable = make_deployable(
        device=device, rp_uuid=RP_UUID,
        attributes=[('rc', 'FPGA'), ('trait0', 'CUSTOM_FAKE_DEVICE')])
    body = _get(api, '/v2/deployables').json
    assert list(body) == ['deployables']
    [shown] = body['deployables']
    assert sorted(shown) == sorted(FIELDS)
    assert shown['uuid'] == deployable.uuid
    assert shown['parent_id'] is None
    assert shown['root_id'] is None
    assert shown['name'] == 'computenode_FakeDevice'
    assert shown['num_accelerators'] == 16
    assert shown['device_id'] == device.id
    assert shown['rp_uuid'] == RP_UUID
    assert shown['driver_name'] == 'fake'
    assert shown['bitstream_id'] is None
    assert shown['updated_at'] is None
    # NOTE(tests): a JSON *string*, exactly as upstream renders it.
    assert shown['attributes_list'] == (
        '[{"rc": "FPGA"}, {"trait0": "CUSTOM_FAKE_DEVICE"}]')
    assert json.loads(shown['attributes_list']) == [
        {'rc': 'FPGA'}, {'trait0': 'CUSTOM_FAKE_DEVICE'}]
    assert shown['links'] == [
        {'href': 'http://localhost/v2/deployables/%s' % deployable.uuid,
         'rel': 'self'},
        {'href': 'http://localhost/deployables/%s' % deployable.uuid,
         'rel': 'bookmark'}]


def test_get_one(api, make_deployable):
    deployable = make_deployable(attributes=[('rc', 'FPGA')])
    shown = _get(api, '/v2/deployables/%s' % deployable.uuid).json
    assert sorted(shown) == sorted(FIELDS)
    assert shown['attributes_list'] == '[{"rc": "FPGA"}]'


def test_no_attributes_is_an_empty_list_string(api, make_deployable):
    deployable = make_deployable()
    shown = _get(api, '/v2/deployables/%s' % deployable.uuid).json
    assert shown['attributes_list'] == '[]'


@pytest.fixture
def tree(make_device, make_deployable):
    device = make_device()
    root = make_deployable(device=device, name='root', rp_uuid=RP_UUID)
    child = make_deployable(device=device, name='child', parent_id=root.id,
                            root_id=root.id, driver_name='other')
    return {'root': root, 'child': child, 'device': device}


@pytest.mark.parametrize('field, value, expected', [
    ('name', 'child', ['child']),
    ('driver_name', 'fake', ['root']),
    ('rp_uuid', RP_UUID, ['root']),
    ('parent_uuid', '{root}', ['child']),
    ('root_uuid', '{root}', ['child']),
    ('parent_uuid', '359c0990-0258-44fd-8b05-fc510ac3d022', []),
    ('device_id', '{device_id}', ['root', 'child']),
    ('uuid', '{child}', ['child']),
    ('limit', '1', ['root']),
    ('sort_dir', 'desc', ['child', 'root']),
    ('sort_key', 'name', ['child', 'root']),
])
def test_legacy_filters(api, tree, field, value, expected):
    value = value.format(root=tree['root'].uuid, child=tree['child'].uuid,
                         device_id=tree['device'].id)
    body = _get(api, '/v2/deployables?filters.field=%s&filters.value=%s'
                % (field, value)).json
    assert [d['name'] for d in body['deployables']] == expected


@pytest.mark.parametrize('query, word', [
    ('filters.field=board&filters.value=x', 'board'),
    ('filters.field=nope&filters.value=x', 'nope'),
    ('filters.field=device_id&filters.value=x', 'device_id'),
    ('filters.field=limit&filters.value=0', 'limit'),
    ('filters.field=sort_key&filters.value=secret', 'sort_key'),
    ('filters.field=sort_dir&filters.value=up', 'sort_dir'),
    ('filters.field=marker&filters.value=x', 'marker'),
    ('name=x', 'name'),
])
def test_bad_query_is_400(api, query, word):
    response = _get(api, '/v2/deployables?%s' % query, expect_errors=True)
    assert response.status_int == 400
    assert word in fault(response)['faultstring']


def test_unknown_uuid_is_404(api):
    uuid = '29e23349-12ee-4978-963c-11484a4ae601'
    response = api.get('/v2/deployables/%s' % uuid, expect_errors=True,
                       headers=dict(ADMIN, **WITH_CODES))
    assert response.status_int == 404
    assert code(response) == 'cyborg.deployable.not_found'


def test_non_uuid_is_404(api):
    response = _get(api, '/v2/deployables/1', expect_errors=True)
    assert response.status_int == 404
    assert fault(response)['faultcode'] == 'Client'


@pytest.mark.parametrize('version, shown', [('2.5', None), ('2.6', True)])
def test_cleaning_from_2_6(api, make_device, make_deployable, version,
                           shown):
    import datetime
    cleaning = make_deployable(
        cleaning_since=datetime.datetime(2026, 1, 1, 12, 0, 0))
    idle = make_deployable(device=make_device(hostname='other'),
                           name='other_FakeDevice')
    headers = dict(ADMIN, **{'OpenStack-API-Version':
                             'accelerator %s' % version})
    listed = {d['uuid']: d for d in api.get(
        '/v2/deployables', headers=headers).json['deployables']}
    for deployable, expected in ((cleaning, shown), (idle, shown and False)):
        one = api.get('/v2/deployables/%s' % deployable.uuid,
                      headers=headers).json
        assert one.get('cleaning') == listed[deployable.uuid].get(
            'cleaning') == expected
        assert ('cleaning' in one) == (version == '2.6')
        assert 'cleaning_since' not in one
