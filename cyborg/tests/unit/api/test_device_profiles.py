"""/v2/device_profiles as python-cyborgclient, openstacksdk and Nova use it."""

import uuid

import pytest

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header

URL = '/v2/device_profiles'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required',
         'accel:bitstream_id': 'd5ca2f11-3108-4426-a11c-a959987565df'}


def _create(api, name='fpga-dp1', groups=None, status=201, version=None,
            **extra):
    body = [dict({'name': name, 'groups': groups or [GROUP]}, **extra)]
    headers = dict(ADMIN, **version_header(version)) if version else ADMIN
    return api.post_json(URL, body, headers=headers, status=status)


def test_create_returns_the_bare_profile_with_its_location(api):
    resp = _create(api, description='two FPGAs')
    profile = resp.json
    assert list(profile) == ['uuid', 'name', 'description', 'groups',
                             'created_at', 'updated_at', 'links']
    assert profile['groups'] == [GROUP]
    assert profile['description'] == 'two FPGAs'
    assert resp.headers['Location'].endswith(URL + '/' + profile['uuid'])
    assert profile['links'][0]['rel'] == 'self'


def test_given_uuid_is_kept_and_keys_are_normalised(api):
    wanted = str(uuid.uuid4())
    profile = _create(api, uuid=wanted, groups=[
        {' resources: FPGA ': ' 2 ', 'trait: CUSTOM_X ': 'required',
         'accel: function_id': 'f'}]).json
    assert profile['uuid'] == wanted
    assert profile['groups'] == [{'resources:FPGA': '2',
                                  'trait:CUSTOM_X': 'required',
                                  'accel:function_id': 'f'}]
    assert profile['description'] == ''


@pytest.mark.parametrize('version', [None, 'accelerator 2.3'])
@pytest.mark.parametrize('group, words', [
    ({'resources:FPGA': '1', 'trait:OWNER_CYBORG': 'required'},
     "'OWNER_CYBORG' is not a trait a device profile may ask for "
     "(CUSTOM_ with"),
    ({'resources:DISK_GB': '1'},
     "'DISK_GB' is not a resource class a device profile may ask for "
     "(one of FPGA, GPU, VGPU, PGPU, CUSTOM_QAT, CUSTOM_NIC, CUSTOM_SSD"),
])
def test_upstream_group_rules_up_to_2_3(api, version, group, words):
    resp = _create(api, groups=[group], version=version, status=400)
    assert words in fault(resp)['faultstring']


@pytest.mark.parametrize('rc', ['FPGA', 'GPU', 'VGPU', 'PGPU', 'CUSTOM_QAT',
                                'CUSTOM_NIC', 'CUSTOM_SSD', 'CUSTOM_X'])
def test_accelerator_classes_at_every_version(api, rc):
    profile = _create(api, name='dp-%s' % rc.lower().replace('_', '-'),
                      groups=[{'resources:%s' % rc: '1'}]).json
    assert profile['groups'] == [{'resources:%s' % rc: '1'}]


def test_standard_traits_and_classes_from_2_4(api):
    groups = [{'resources:FPGA': '1', 'trait:OWNER_CYBORG': 'required'},
              {'resources:DISK_GB': '1'}]
    profile = _create(api, groups=groups, version='accelerator 2.4').json
    assert profile['groups'] == groups


def test_list_and_filter_by_names(api):
    for name in ('a', 'b', 'c'):
        _create(api, name=name)
    listed = api.get(URL, headers=READER).json['device_profiles']
    assert [p['name'] for p in listed] == ['a', 'b', 'c']
    some = api.get(URL + '?name=a,c', headers=READER).json
    assert [p['name'] for p in some['device_profiles']] == ['a', 'c']
    api.get(URL + '?nam=a', headers=READER, status=400)


def test_get_one_is_wrapped_and_by_name_from_2_2(api):
    created = _create(api).json
    one = api.get(URL + '/' + created['uuid'], headers=READER).json
    assert one == {'device_profile': created}
    by_name = api.get(URL + '/fpga-dp1', headers=dict(
        READER, **version_header('accelerator 2.2'))).json
    assert by_name['device_profile']['uuid'] == created['uuid']
    # a name where 2.0 and 2.1 expect a uuid is not acceptable, as upstream
    refused = api.get(URL + '/fpga-dp1', headers=dict(
        READER, **version_header('accelerator 2.1')), status=406)
    assert 'needs microversion 2.2' in fault(refused)['faultstring']
    api.get(URL + '/fpga-dp1', headers=READER, status=406)
    api.get(URL + '/' + str(uuid.uuid4()), headers=READER, status=404)


def test_duplicate_name_is_409(api):
    _create(api)
    resp = _create(api, status=409, version='2.12')
    assert code(resp) == 'cyborg.device_profile.duplicate_name'


def test_duplicate_uuid_is_409_naming_the_uuid(api):
    # upstream answers 500 (tempest's test_create_device_profile_server_fault)
    first = _create(api).json
    resp = _create(api, name='new-fpga', uuid=first['uuid'], status=409,
                   version='2.12')
    assert code(resp) == 'cyborg.device_profile.duplicate_uuid'
    assert fault(resp)['faultstring'] == (
        'A device profile with uuid %s already exists.' % first['uuid'])


@pytest.mark.parametrize('body, words', [
    ([], 'should be non-empty'),
    ([{'name': 'x', 'groups': [GROUP]}, {'name': 'y', 'groups': [GROUP]}],
     'is too long'),
    ([{'groups': [GROUP]}], "'name' is a required property"),
    ([{'name': 'x'}], "'groups' is a required property"),
    ([{'name': 'x', 'groups': []}], 'should be non-empty'),
    ([{'name': 'x y', 'groups': [GROUP]}], 'does not match'),
    ([{'name': 'x', 'groups': [GROUP], 'flavor': 'm1'}],
     'Additional properties are not allowed'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': 1}]}],
     "1 is not of type 'string'"),
    ([{'name': 'x', 'groups': [{'cpu:FPGA': '1'}]}], 'does not match'),
    ([{'name': 'x', 'groups': [{'resources:fpga': '1'}]}],
     'is not a resource class'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '0'}]}],
     'must be a positive integer'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '-1'}]}],
     'must be a positive integer'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'trait:NOT_A_TRAIT': 'required'}]}],
     'is not a trait'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'trait:CUSTOM_X': 'preferred'}]}],
     'must be required or forbidden'),
    ([{'name': 'x', 'groups': [{'trait:CUSTOM_X': 'required'}]}],
     'asks for no resource'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'accel:bitstream_id': 'nope'}]}],
     'must be an image UUID'),
    ([{'name': 'x', 'groups': [dict(GROUP, **{'accel:function_id': 'f'})]}],
     'names both'),
    ([{'name': 'x', 'uuid': 'nope', 'groups': [GROUP]}],
     "'nope' is not a 'uuid' at /0/uuid"),
    ('not a list', "is not of type 'array'"),
])
def test_bad_bodies_are_400_with_the_reason(api, body, words):
    resp = api.post_json(URL, body, headers=ADMIN, status=400)
    assert words in fault(resp)['faultstring']
    assert api.get(URL, headers=ADMIN).json['device_profiles'] == []


def test_body_that_is_not_json_is_400(api):
    resp = api.post(URL, '[{', headers=dict(
        ADMIN, **WITH_CODES, **{'Content-Type': 'application/json'}),
        status=400)
    assert code(resp) == 'cyborg.body.malformed'


def test_delete_by_uuid_and_by_names(api):
    first = _create(api, name='a').json
    _create(api, name='b')
    _create(api, name='c')
    api.delete(URL + '/' + first['uuid'], headers=ADMIN, status=204)
    api.delete(URL + '?value=b,c', headers=ADMIN, status=204)
    assert api.get(URL, headers=ADMIN).json['device_profiles'] == []
    api.delete(URL + '/' + first['uuid'], headers=ADMIN, status=404)


def test_delete_of_names_is_all_or_nothing(api):
    _create(api, name='a')
    api.delete(URL + '?value=a,missing', headers=ADMIN, status=404)
    assert len(api.get(URL, headers=ADMIN).json['device_profiles']) == 1


def test_only_admins_write(api):
    api.post_json(URL, [{'name': 'x', 'groups': [GROUP]}], headers=READER,
                  status=403)
    _create(api, name='x')
    api.delete(URL + '?value=x', headers=READER, status=403)
