"""/v2/attributes: list, show, create, delete; trait ones reach Placement."""

import uuid

import pytest

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header

URL = '/v2/attributes'
MANAGER = {'X-Roles': 'manager', 'X-Project-Id': 'p1', 'X-User-Id': 'u1'}


@pytest.fixture
def node(stack, placement, api):
    """The fake driver's host, its provider in a real Placement."""
    agent = stack('node1', placement=placement)
    agent.report()
    (dep,) = api.get('/v2/deployables', headers=ADMIN).json['deployables']
    return {'agent': agent, 'deployable': dep, 'id': _id_of(api)}


def _id_of(api):
    """The one deployable's integer id, as its attributes name it."""
    attrs = api.get(URL, headers=ADMIN).json['attributes']
    ids = {a['deployable_id'] for a in attrs}
    assert len(ids) == 1
    return ids.pop()


def _traits(placement, dep):
    return placement.subtree('node1')[dep['name']]['traits']


def test_driver_attributes_are_listed(api, node):
    attrs = api.get(URL, headers=ADMIN).json['attributes']
    assert {a['key'] for a in attrs} == {'rc', 'trait0'}
    rc = next(a for a in attrs if a['key'] == 'rc')
    assert rc['value'] == 'FPGA'
    assert list(rc) == ['uuid', 'deployable_id', 'key', 'value',
                        'created_at', 'updated_at', 'links']
    assert rc['links'][0]['href'].endswith(URL + '/' + rc['uuid'])
    one = api.get(URL + '/' + rc['uuid'], headers=MANAGER).json
    assert one == rc
    only = api.get(URL + '?key=rc&deployable_id=%d' % node['id'],
                   headers=ADMIN).json['attributes']
    assert [a['uuid'] for a in only] == [rc['uuid']]
    assert api.get(URL + '?deployable_id=99999',
                   headers=ADMIN).json['attributes'] == []


def test_trait_attribute_reaches_placement_and_goes_away(api, node,
                                                         placement):
    dep = node['deployable']
    assert 'CUSTOM_GOLD' not in _traits(placement, dep)
    resp = api.post_json(URL, {'deployable_id': node['id'],
                               'key': 'trait_tier', 'value': 'CUSTOM_GOLD'},
                         headers=ADMIN, status=201)
    created = resp.json
    assert resp.headers['Location'].endswith(URL + '/' + created['uuid'])
    assert (created['key'], created['value']) == ('trait_tier', 'CUSTOM_GOLD')
    assert 'CUSTOM_GOLD' in _traits(placement, dep)
    # A report (the hardware unchanged) and a heal keep the operator's.
    node['agent'].report()
    node['agent'].placement.heal(node['agent'].cache.devices)
    assert 'CUSTOM_GOLD' in _traits(placement, dep)
    assert 'trait_tier' in {a['key'] for a in api.get(
        URL, headers=ADMIN).json['attributes']}
    api.delete(URL + '/' + created['uuid'], headers=ADMIN, status=204)
    assert 'CUSTOM_GOLD' not in _traits(placement, dep)
    api.get(URL + '/' + created['uuid'], headers=ADMIN, status=404)


def test_plain_attribute_is_only_recorded(api, node, placement):
    before = _traits(placement, node['deployable'])
    created = api.post_json(URL, {'deployable_id': node['id'],
                                  'key': 'rack', 'value': 'r12'},
                            headers=ADMIN, status=201).json
    assert _traits(placement, node['deployable']) == before
    assert api.get(URL + '?key=rack', headers=ADMIN).json['attributes'] == \
        [created]


def test_openstacksdks_wrapped_body_creates_too(api, node):
    # NOTE(tests): openstacksdk's Attribute sends its resource key.
    created = api.post_json(URL, {'attribute': {
        'deployable_id': node['id'], 'key': 'rack', 'value': 'r7'}},
        headers=ADMIN, status=201).json
    assert (created['key'], created['value']) == ('rack', 'r7')
    # Wrapped, the body is held to the same schema.
    resp = api.post_json(URL, {'attribute': {'deployable_id': node['id'],
                                             'key': 'rack'}},
                         headers=ADMIN, status=400)
    assert 'value' in fault(resp)['faultstring']


def test_the_deployable_as_the_openstack_cli_names_it(api, node):
    """openstacksdk sends the deployable the user named as a string: its
    id's digits or its uuid (both were a 400)."""
    for index, named in enumerate((str(node['id']),
                                   node['deployable']['uuid'])):
        created = api.post_json(URL, {'attribute': {
            'deployable_id': named, 'key': 'rack%d' % index,
            'value': 'r1'}}, headers=ADMIN, status=201).json
        assert created['deployable_id'] == node['id']
    resp = api.post_json(URL, {'deployable_id': str(uuid.uuid4()),
                               'key': 'rack', 'value': 'r1'},
                         headers=ADMIN, status=400)
    assert 'does not exist' in fault(resp)['faultstring']


@pytest.mark.parametrize('body', [
    {},
    {'attribute': {'deployable_id': 1, 'key': 'rack', 'value': 'r1'},
     'extra': True},
    {'deployable_id': 1, 'key': 'rack'},
    {'deployable_id': 'rack-1', 'key': 'rack', 'value': 'r1'},
    {'deployable_id': '0', 'key': 'rack', 'value': 'r1'},
    {'deployable_id': '1.0', 'key': 'rack', 'value': 'r1'},
    {'deployable_id': True, 'key': 'rack', 'value': 'r1'},
    {'deployable_id': 0, 'key': 'rack', 'value': 'r1'},
    {'deployable_id': 1, 'key': '', 'value': 'r1'},
    {'deployable_id': 1, 'key': ' rack', 'value': 'r1'},
    {'deployable_id': 1, 'key': 'rack', 'value': 'r1', 'extra': True},
    {'deployable_id': 1, 'key': 'x' * 256, 'value': 'r1'},
    [{'deployable_id': 1, 'key': 'rack', 'value': 'r1'}],
])
def test_bad_bodies_are_400(api, node, body):
    resp = api.post_json(URL, body, headers=dict(ADMIN, **WITH_CODES),
                         status=400)
    assert code(resp) == 'cyborg.body.invalid'


@pytest.mark.parametrize('value', ['lower_case', 'CUSTOM_'])
def test_a_trait_attribute_must_name_a_custom_trait(api, node, value):
    resp = api.post_json(URL, {'deployable_id': 1, 'key': 'trait_x',
                               'value': value},
                         headers=dict(ADMIN, **WITH_CODES), status=400)
    assert code(resp) == 'cyborg.invalid'


def test_unknown_deployable_is_400(api, node):
    resp = api.post_json(URL, {'deployable_id': 99999, 'key': 'rack',
                               'value': 'r1'}, headers=ADMIN, status=400)
    assert 'deployable 99999' in fault(resp)['faultstring']


def test_conflicts(api, node):
    body = {'deployable_id': node['id'], 'key': 'rack', 'value': 'r1'}
    api.post_json(URL, body, headers=ADMIN, status=201)
    api.post_json(URL, body, headers=ADMIN, status=409)
    for key in ('rc', 'trait0', 'trait7'):
        resp = api.post_json(URL, dict(body, key=key),
                             headers=dict(ADMIN, **WITH_CODES), status=409)
        assert code(resp) == 'cyborg.attribute.driver_managed'
    rc = api.get(URL + '?key=rc', headers=ADMIN).json['attributes'][0]
    api.delete(URL + '/' + rc['uuid'], headers=ADMIN, status=409)
    assert api.get(URL + '/' + rc['uuid'], headers=ADMIN).json == rc


def test_missing_and_forbidden(api, node):
    api.get(URL + '/' + str(uuid.uuid4()), headers=ADMIN, status=404)
    api.get(URL + '/nope', headers=ADMIN, status=404)
    api.delete(URL + '/' + str(uuid.uuid4()), headers=ADMIN, status=404)
    api.get(URL, headers=READER, status=403)
    api.post_json(URL, {'deployable_id': node['id'], 'key': 'rack',
                        'value': 'r1'}, headers=MANAGER, status=403)
    api.get(URL + '?deployable_id=x', headers=ADMIN, status=400)
    api.get(URL + '?other=1', headers=ADMIN, status=400)


def test_paging_from_2_4(api, node):
    headers = dict(ADMIN, **version_header('accelerator 2.4'))
    page = api.get(URL + '?limit=1&sort_key=key', headers=headers).json
    assert [a['key'] for a in page['attributes']] == ['rc']
    assert 'marker=' in page['next']
    api.get(URL + '?limit=1', headers=ADMIN, status=400)


def test_deployable_named_by_uuid_from_2_4(api, node):
    headers = dict(ADMIN, **version_header('accelerator 2.4'))
    dep_uuid = node['deployable']['uuid']
    created = api.post_json(URL, {'deployable_uuid': dep_uuid,
                                  'key': 'rack', 'value': 'r2'},
                            headers=headers, status=201).json
    assert created['deployable_id'] == node['id']
    found = api.get(URL + '?key=rack&deployable_uuid=' + dep_uuid,
                    headers=headers).json['attributes']
    assert [a['uuid'] for a in found] == [created['uuid']]
    for body in ({'deployable_uuid': dep_uuid, 'deployable_id': node['id'],
                  'key': 'k', 'value': 'v'},
                 {'key': 'k', 'value': 'v'},
                 {'deployable_uuid': 'nope', 'key': 'k', 'value': 'v'},
                 {'deployable_uuid': str(uuid.uuid4()), 'key': 'k',
                  'value': 'v'}):
        api.post_json(URL, body, headers=headers, status=400)
    # Before 2.4 the uuid is unknown, as upstream.
    api.post_json(URL, {'deployable_uuid': dep_uuid, 'key': 'k',
                        'value': 'v'}, headers=ADMIN, status=400)
    api.get(URL + '?deployable_uuid=' + dep_uuid, headers=ADMIN, status=400)
    api.get(URL + '?deployable_uuid=%s&deployable_id=%d'
            % (dep_uuid, node['id']), headers=headers, status=400)


def test_keys_with_trailing_whitespace_are_400(api, node):
    for key in ('rack\n', 'rack ', '\track'):
        api.post_json(URL, {'deployable_id': node['id'], 'key': key,
                            'value': 'r1'}, headers=ADMIN, status=400)
