"""GET /v2/limits (2.7) and the 403 of an accelerator request over quota.

A real conductor answers over the fake transport, with [quota] limits.
"""

import pytest

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-tenant',
          'X-User-Id': 'u-tenant'}
V27 = {'OpenStack-API-Version': 'accelerator 2.7'}
ARQS = '/v2/accelerator_requests'


@pytest.fixture
def cloud(stack, api, override):
    override('limits', {'FPGA': '3'}, group='quota')
    stack('node1').report()
    api.post_json('/v2/device_profiles', [
        {'name': 'two', 'groups': [{'resources:FPGA': '2'}]}],
        headers=ADMIN)
    return api


def _limits(api, headers, query='', status=200):
    return api.get('/v2/limits' + query, headers=dict(headers, **V27),
                   status=status)


def test_an_arq_create_over_quota_is_a_403_naming_the_limit(cloud):
    cloud.post_json(ARQS, {'device_profile_name': 'two'}, headers=MEMBER,
                    status=201)
    response = cloud.post_json(ARQS, {'device_profile_name': 'two'},
                               headers=dict(MEMBER, **WITH_CODES),
                               status=403)
    assert code(response) == 'cyborg.quota.exceeded'
    assert fault(response)['faultstring'] == (
        'Quota exceeded: class:FPGA has a limit of 3; project p-tenant uses '
        '2 and asks for 2 more.')
    assert len(cloud.get(ARQS, headers=MEMBER).json['arqs']) == 2


def test_limits_show_the_callers_usage(cloud):
    cloud.post_json(ARQS, {'device_profile_name': 'two'}, headers=MEMBER,
                    status=201)
    assert _limits(cloud, MEMBER).json == {
        'project_id': 'p-tenant',
        'limits': [{'resource': 'class:FPGA', 'resource_class': 'FPGA',
                    'limit': 3, 'usage': 2}]}
    assert _limits(cloud, READER).json['limits'][0]['usage'] == 0
    assert _limits(cloud, ADMIN, '?project_id=p-tenant').json[
        'limits'][0]['usage'] == 2
    assert _limits(cloud, MEMBER, '?project_id=p-tenant').json[
        'project_id'] == 'p-tenant'


def test_another_projects_limits_are_an_admins(cloud):
    response = cloud.get('/v2/limits?project_id=p-admin', status=403,
                         headers=dict(MEMBER, **WITH_CODES))
    assert code(response) == 'cyborg.policy.not_allowed'


def test_limits_need_2_7(cloud):
    response = cloud.get('/v2/limits', headers=dict(
        MEMBER, **{'OpenStack-API-Version': 'accelerator 2.6'}), status=404)
    assert '2.7' in fault(response)['faultstring']


def test_an_unknown_query_parameter_is_a_400(cloud):
    _limits(cloud, MEMBER, '?tenant_id=x', status=400)
