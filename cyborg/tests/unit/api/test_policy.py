"""Policy defaults, the enforcer entry point and the 403 from the API."""

import pytest

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import policies
from cyborg import policy
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import fault

INVENTORY_RULES = ('cyborg:device:get_all', 'cyborg:device:get_one',
                   'cyborg:deployable:get_all', 'cyborg:deployable:get_one')


@pytest.fixture
def enforcer():
    policy.reset()
    yield policy.init()
    policy.reset()


def _context(roles, project_id='p1'):
    return cyborg_context.RequestContext(roles=roles, project_id=project_id,
                                         user_id='u1')


def test_rules_are_documented():
    rules = {rule.name: rule for rule in policies.list_rules()}
    for name in INVENTORY_RULES:
        rule = rules[name]
        assert rule.check_str == 'rule:project_manager_or_admin'
        assert rule.scope_types == ['project']
        assert rule.operations[0]['method'] == 'GET'
        assert rule.operations[0]['path'].startswith('/v2/')
    for name in ('admin_api', 'project_reader_api', 'project_member_api',
                 'project_manager_api', 'project_admin_api', 'service_api',
                 'project_member_or_admin', 'project_reader_or_admin',
                 'project_manager_or_admin', 'project_member_or_service'):
        assert name in rules
    assert rules['admin_api'].check_str == 'role:admin'
    assert rules['service_api'].check_str == 'role:service'


@pytest.mark.parametrize('roles, allowed', [
    (['admin'], True),
    (['manager'], True),
    (['member'], False),
    (['reader'], False),
    (['service'], False),
])
def test_inventory_rules(enforcer, roles, allowed):
    context = _context(roles)
    for rule in INVENTORY_RULES:
        if allowed:
            assert policy.authorize(rule, None, context)
        else:
            with pytest.raises(exception.Forbidden):
                policy.authorize(rule, None, context)


def test_forbidden_carries_the_rule_name(enforcer):
    with pytest.raises(exception.PolicyNotAuthorized) as caught:
        policy.authorize('cyborg:device:get_all', None, _context(['reader']))
    assert 'cyborg:device:get_all' in str(caught.value)


@pytest.mark.parametrize('argv, expected', [
    (['--namespace', 'cyborg'], []),
    (['--config-file', 'a.conf', '--output-file', 'out'],
     ['--config-file', 'a.conf']),
    (['--config-file=a.conf', '--config-dir', 'd'],
     ['--config-file=a.conf', '--config-dir', 'd']),
    (['--config-file'], []),
])
def test_config_args(argv, expected):
    assert policy._config_args(argv) == expected


def test_get_enforcer_reads_only_config_args(monkeypatch, tmp_path):
    config = tmp_path / 'cyborg.conf'
    config.write_text('[api]\nport = 7777\n')
    monkeypatch.setattr('sys.argv', [
        'oslopolicy-sample-generator', '--namespace', 'cyborg',
        '--config-file', str(config), '--output-file=/dev/null'])
    calls = []
    # NOTE(tests): the session's configuration is parsed already; record
    # what get_enforcer would parse instead of parsing it again.
    monkeypatch.setattr(type(policy.CONF), '__call__',
                        lambda self, args, **kw: calls.append((args, kw)))
    policy.reset()
    try:
        assert policy.get_enforcer() is policy.init()
    finally:
        policy.reset()
    assert calls == [(['--config-file', str(config)],
                      {'project': 'cyborg'})]


def test_reader_gets_403_envelope(api):
    response = api.get('/v2/devices', headers=READER, expect_errors=True)
    assert response.status_int == 403
    assert fault(response)['faultcode'] == 'Client'
    assert 'cyborg:device:get_all' in fault(response)['faultstring']


def test_no_roles_gets_403(api):
    headers = {'X-User-Id': 'u1', 'X-Project-Id': 'p1'}
    response = api.get('/v2/deployables', headers=headers,
                       expect_errors=True)
    assert response.status_int == 403


def test_noauth_without_identity_is_admin(api):
    # The embedded default answers a plain curl.
    assert api.get('/v2/deployables').status_int == 200


def test_project_manager_may_list(api):
    headers = {'X-Roles': 'manager', 'X-Project-Id': 'p1'}
    assert api.get('/v2/devices', headers=headers).status_int == 200
