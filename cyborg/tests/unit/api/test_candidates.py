"""GET /v2/device_profiles/{uuid_or_name}/candidates (2.8): the API side.

The judging itself is tested in cyborg/tests/unit/conductor/test_explain.py
and on a real deployment in cyborg/tests/functional/test_explain.py.
"""

import pytest

from cyborg.conductor import explain
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.conductor import test_explain as fakes

MANAGER = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p-tenant',
           'X-User-Id': 'u-tenant'}
V28 = {'OpenStack-API-Version': 'accelerator 2.8'}
URL = '/v2/device_profiles/%s/candidates'


@pytest.fixture
def cloud(stack, api):
    stack('node1').report()
    api.post_json('/v2/device_profiles', [
        {'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}],
        headers=ADMIN)
    return api


def _get(api, path, headers=MANAGER, status=200):
    return api.get(path, headers=dict(V28, **headers), status=status)


def test_the_callers_project_and_the_conductors_answer(cloud, monkeypatch):
    placement = fakes.FakePlacement()
    real = explain.explain
    monkeypatch.setattr(explain, 'explain', lambda *a, **k: real(
        *a, client=placement))
    aggregate = 'in:6f1b5c2e-1111-4a4a-9b9b-0123456789ab'
    body = _get(cloud, URL % 'fpga' + '?member_of=' + aggregate).json
    assert body['project_id'] == 'p-tenant'
    assert body['member_of'] == aggregate
    assert placement.queries == [({'FPGA': 1}, [], aggregate)]
    (candidate,) = body['groups'][0]['candidates']
    assert candidate['hostname'] == 'node1'
    assert list(candidate) == [
        'deployable_uuid', 'deployable_name', 'device_uuid', 'hostname',
        'resource_class', 'rp_uuid', 'schedulable', 'reason', 'detail']


def test_without_placement_it_is_a_503(cloud, override):
    override('auth_type', None, group='placement')
    response = _get(cloud, URL % 'fpga', status=503,
                    headers=dict(MANAGER, **WITH_CODES))
    assert code(response) == 'cyborg.placement.unavailable'
    assert fault(response)['faultstring'] == (
        'Placement is unavailable: [placement] is not configured on the '
        'conductor')


@pytest.mark.parametrize('query', [
    'member_of=x', 'member_of=in:x,y',
    'member_of=6f1b5c2e-1111-4a4a-9b9b-0123456789ab,'
    '6f1b5c2e-1111-4a4a-9b9b-0123456789ac',
    'tenant=1'])
def test_bad_queries_are_400s(cloud, query):
    _get(cloud, URL % 'fpga' + '?' + query, status=400)


def test_a_reader_may_not(cloud):
    response = _get(cloud, URL % 'fpga', headers=dict(READER, **WITH_CODES),
                    status=403)
    assert code(response) == 'cyborg.policy.not_allowed'


def test_an_unknown_profile_is_a_404(cloud):
    _get(cloud, URL % 'no-such', headers=ADMIN, status=404)


@pytest.mark.parametrize('version', ['2.2', '2.7'])
def test_before_2_8_there_are_no_candidates(cloud, version):
    response = cloud.get(URL % 'fpga', status=404, headers=dict(
        MANAGER, **{'OpenStack-API-Version': 'accelerator %s' % version}))
    assert '2.8' in fault(response)['faultstring']


def test_other_parts_and_queries_of_a_profile(cloud):
    _get(cloud, '/v2/device_profiles/fpga/other', status=404)
    _get(cloud, '/v2/device_profiles/fpga?member_of=x', status=400)
    assert _get(cloud, '/v2/device_profiles/fpga').json[
        'device_profile']['name'] == 'fpga'
    cloud.get('/v2/device_profiles/fpga/candidates', status=404,
              headers=dict(MANAGER, **{
                  'OpenStack-API-Version': 'accelerator 2.0'}))
