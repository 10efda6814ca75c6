"""Policy defaults, the enforcer entry point and the 403 from the API."""

import os

import pytest

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import policies
from cyborg import policy
from cyborg.api import app as api_app
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
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
    response = api.get('/v2/devices', headers=dict(READER, **WITH_CODES),
                       expect_errors=True)
    assert response.status_int == 403
    assert fault(response)['faultcode'] == 'Client'
    assert code(response) == 'cyborg.policy.not_allowed'
    # NOTE(tests): the message names the rule, for the operator to find.
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


# --- What an operator's policy file can do, and get wrong --------------------

MANAGER = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p1',
           'X-User-Id': 'u1'}
ADMIN_ROLES = {'X-Roles': 'admin,manager,member,reader',
               'X-Project-Id': 'p-admin', 'X-User-Id': 'u-admin'}


@pytest.fixture
def policy_file(tmp_path, override):
    """A policy file the API reads; written by the test."""
    path = tmp_path / 'policy.yaml'
    path.write_text('{}\n')
    override('policy_file', str(path), group='oslo_policy')
    policy.reset()
    yield path
    policy.reset()


def _rewrite(path, text):
    # NOTE(tests): oslo.policy reloads a file whose mtime grew.
    before = path.stat().st_mtime
    path.write_text(text)
    os.utime(path, (before + 10, before + 10))


def test_default_rule_fails_closed(enforcer):
    rules = {rule.name: rule for rule in policies.list_rules()}
    assert rules['default'].check_str == 'rule:admin_api'
    assert rules['context_is_admin'].check_str == 'role:admin'


def test_an_undefined_rule_is_admin_only(api, policy_file):
    # A typo in an override: oslo.policy evaluates it as "default".
    _rewrite(policy_file, '"cyborg:device:get_all": "rule:manager_api"\n')
    response = api.get('/v2/devices', headers=MANAGER, expect_errors=True)
    assert response.status_int == 403
    assert api.get('/v2/devices', headers=ADMIN_ROLES).status_int == 200


def test_a_broken_edit_keeps_the_last_good_rules(api, policy_file, caplog):
    _rewrite(policy_file, '"cyborg:device:get_all": "role:manager"\n')
    assert api.get('/v2/devices', headers=MANAGER).status_int == 200
    _rewrite(policy_file, '"cyborg:device:get_all": "role:manager"\n'
                          '"cyborg:device:get_one": [unclosed\n')
    caplog.clear()
    for _ in range(3):
        # never a 500: the rules loaded before stay in force
        assert api.get('/v2/devices', headers=MANAGER).status_int == 200
    errors = [r for r in caplog.records if r.levelname == 'ERROR']
    assert len(errors) == 1, errors
    assert '%s cannot be parsed at line 3' % policy_file in (
        errors[0].getMessage())
    _rewrite(policy_file, '"cyborg:device:get_all": "role:admin"\n')
    assert api.get('/v2/devices', headers=MANAGER,
                   expect_errors=True).status_int == 403


def test_a_broken_file_stops_the_start(policy_file):
    policy_file.write_text('- not a mapping\n')
    with pytest.raises(exception.ConfigError) as caught:
        api_app.setup_app()
    assert '%s cannot be parsed at line 1' % policy_file in str(
        caught.value)


def test_scoping_follows_the_rules(api, policy_file):
    # A support role that reads every project's ARQs.
    _rewrite(policy_file,
             '"cyborg:arq:get_all": "role:support or rule:project_reader_api"'
             '\n"cyborg:arq:all_projects": "rule:context_is_admin or '
             'role:support"\n')
    support = cyborg_context.RequestContext(roles=['support'],
                                            project_id='p1', user_id='u1')
    reader = cyborg_context.RequestContext(roles=['reader'],
                                           project_id='p1', user_id='u1')
    admin = cyborg_context.RequestContext(roles=['admin', 'reader'],
                                          project_id='p1', user_id='u1')
    found = {name: policy.scope('cyborg:arq:get_all',
                                'cyborg:arq:all_projects', context)
             for name, context in (('support', support), ('reader', reader),
                                   ('admin', admin))}
    assert found == {'support': None, 'reader': 'p1', 'admin': None}


def test_a_request_of_no_project_passes_no_rule(enforcer):
    # A system- or domain-scoped token: oslo.policy would compare
    # project_id:%(project_id)s as "None" == "None".
    for roles in (['admin'], ['reader']):
        context = cyborg_context.RequestContext(roles=roles, user_id='u1')
        assert not policy.check('cyborg:device_profile:get_all', None,
                                context)
        assert not policy.check('context_is_admin', None, context)
        with pytest.raises(exception.Forbidden):
            policy.scope('cyborg:arq:get_all', 'cyborg:arq:all_projects',
                         context)
