"""cyborg-status upgrade check: each check, and the command as operators
run it."""

import datetime
import json

from oslo_policy import opts as policy_opts
from oslo_upgradecheck import upgradecheck
import pytest
import sqlalchemy as sa

from cyborg import states
from cyborg.agent import manager as agent_manager
from cyborg.cmd import status
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import processes

Code = upgradecheck.Code
AGENT = 'cyborg-agent'
CONDUCTOR = 'cyborg-conductor'
AGENT_RPC = agent_rpcapi.AgentAPI.RPC_API_VERSION
CONDUCTOR_RPC = conductor_rpcapi.ConductorAPI.RPC_API_VERSION
#: A revision of the chain before the head (services without rpc_version).
OLDER_REVISION = '9d3f6b2a8c15'


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _service(engine, host, binary, rpc_version, age=0, **values):
    with engine.begin() as conn:
        conn.execute(sa.insert(models.Service.__table__).values(
            host=host, binary=binary, rpc_version=rpc_version,
            report_count=1, disabled=False,
            last_seen_up=_now() - datetime.timedelta(seconds=age),
            **values))


def _arq(engine, uuid, state, age):
    changed = _now() - datetime.timedelta(seconds=age)
    with engine.begin() as conn:
        conn.execute(sa.insert(models.AcceleratorRequest.__table__).values(
            uuid=uuid, state=state, device_profile_group_id=0,
            created_at=changed, updated_at=changed))


def _uuid(number):
    return '00000000-0000-4000-8000-%012d' % number


@pytest.fixture
def checks(db):
    return status.Checks()


def test_the_release_serves_what_its_clients_ask_for():
    # NOTE(tests): services record their managers' target versions; the
    # check compares them with the clients' caps.
    assert (conductor_manager.ConductorManager.target.version ==
            CONDUCTOR_RPC)
    assert agent_manager.AgentManager.target.version == AGENT_RPC


# --- Database schema ---------------------------------------------------------

def test_schema_at_head(checks):
    result = checks._check_schema()
    assert result.code == Code.SUCCESS
    assert migration.head() in result.details


@pytest.fixture
def unreachable_database(db):
    # NOTE(tests): not the override fixture: clearing its override would
    # also clear the session's, which every later test's checks read.
    connection = status.CONF.database.connection
    status.CONF.set_override('connection',
                             'sqlite:////nonexistent/dir/cyborg.sqlite',
                             group='database')
    yield
    status.CONF.set_override('connection', connection, group='database')


def test_schema_without_database(checks, unreachable_database):
    result = checks._check_schema()
    assert result.code == Code.FAILURE
    assert '[database] connection' in result.details
    for other in (checks._check_conductors, checks._check_rpc_versions,
                  checks._check_stuck_arqs):
        result = other()
        assert result.code == Code.WARNING
        assert result.details.startswith('Not checked')


def test_schema_behind_head(checks, monkeypatch):
    monkeypatch.setattr(migration, 'version', lambda: OLDER_REVISION)
    result = checks._check_schema()
    assert result.code == Code.FAILURE
    assert OLDER_REVISION in result.details
    assert migration.head() in result.details
    assert 'cyborg-dbsync upgrade' in result.details


def test_schema_empty(checks, monkeypatch):
    monkeypatch.setattr(migration, 'version', lambda: None)
    result = checks._check_schema()
    assert result.code == Code.FAILURE
    assert 'no Cyborg schema' in result.details
    assert 'cyborg-dbsync upgrade' in result.details


# --- Conductor liveness ------------------------------------------------------

def test_no_conductor(checks, db):
    _service(db, 'ctl', CONDUCTOR, CONDUCTOR_RPC, age=3600)
    result = checks._check_conductors()
    assert result.code == Code.WARNING
    assert 'No cyborg-conductor' in result.details


def test_conductors_up(checks, db):
    _service(db, 'ctl2', CONDUCTOR, CONDUCTOR_RPC)
    _service(db, 'ctl1', CONDUCTOR, CONDUCTOR_RPC)
    result = checks._check_conductors()
    assert result.code == Code.SUCCESS
    assert result.details == 'Conductors up: ctl1, ctl2'


# --- Service RPC versions ----------------------------------------------------

def test_rpc_versions_current(checks, db):
    _service(db, 'ctl', CONDUCTOR, CONDUCTOR_RPC)
    _service(db, 'node1', AGENT, AGENT_RPC)
    # NOTE(tests): a service of a newer release is no reason to wait.
    _service(db, 'node2', AGENT, '99.0')
    result = checks._check_rpc_versions()
    assert result.code == Code.SUCCESS
    assert AGENT_RPC in result.details and CONDUCTOR_RPC in result.details


def test_rpc_versions_older_live_services(checks, db):
    _service(db, 'ctl', CONDUCTOR, '1.0')
    _service(db, 'node1', AGENT, '1.0')
    _service(db, 'node2', AGENT, None)
    _service(db, 'node3', AGENT, AGENT_RPC)
    # NOTE(tests): down services are not asked anything; not named.
    _service(db, 'node4', AGENT, '1.0', age=7200)
    result = checks._check_rpc_versions()
    assert result.code == Code.WARNING
    assert result.details.startswith('These live services')
    assert 'cyborg-agent on node1 (1.0)' in result.details
    assert 'cyborg-agent on node2 (not recorded)' in result.details
    assert 'cyborg-conductor on ctl (1.0)' in result.details
    assert 'node3' not in result.details and 'node4' not in result.details
    assert 'Upgrade each' in result.details


def test_rpc_versions_name_at_most_ten_hosts(checks, db):
    for number in range(13):
        _service(db, 'node%02d' % number, AGENT, '1.0')
    result = checks._check_rpc_versions()
    assert result.code == Code.WARNING
    assert 'node09' in result.details and 'node10' not in result.details
    assert 'and 3 more' in result.details


def test_services_record_their_rpc_versions(stack, db):
    agent = stack()
    agent.report()
    with db.connect() as conn:
        recorded = dict(conn.execute(sa.select(
            models.Service.binary, models.Service.rpc_version)).all())
    assert recorded == {CONDUCTOR: CONDUCTOR_RPC, AGENT: AGENT_RPC}
    assert status.Checks()._check_rpc_versions().code == Code.SUCCESS


def test_an_upgraded_agent_records_its_version_once(stack, db):
    agent = stack()
    agent.report()
    # NOTE(tests): as if the agent ran an older release until now: its row
    # and its cache say so, and its inventory did not change.
    with db.begin() as conn:
        conn.execute(sa.update(models.Service.__table__)
                     .where(models.Service.binary == AGENT)
                     .values(rpc_version='1.0', version='0.9'))
    agent.cache.applied(agent.cache.generation, agent.cache.devices,
                        {'version': '0.9', 'rpc_version': '1.0'})
    assert status.Checks()._check_rpc_versions().code == Code.WARNING
    sent = []
    original = agent.conductor.report_delta
    agent.conductor.report_delta = lambda *a, **k: (
        sent.append(a[2]), original(*a, **k))[1]

    agent.report()
    assert len(sent) == 1
    assert sent[0]['changed'] == [] and sent[0]['removed'] == []
    assert sent[0]['rpc_version'] == AGENT_RPC
    assert status.Checks()._check_rpc_versions().code == Code.SUCCESS

    # The next pass is a heartbeat again.
    agent.report()
    assert len(sent) == 1


# --- Stuck accelerator requests ----------------------------------------------

def test_no_stuck_arqs(checks, db, override):
    override('arq_stuck_after', 600, group='conductor')
    _arq(db, _uuid(1), states.ARQ_BIND_STARTED, age=60)
    _arq(db, _uuid(2), states.ARQ_BOUND, age=86400)
    _arq(db, _uuid(3), states.ARQ_BIND_FAILED, age=86400)
    assert checks._check_stuck_arqs().code == Code.SUCCESS


def test_stuck_arqs(checks, db, override):
    override('arq_stuck_after', 600, group='conductor')
    _arq(db, _uuid(1), states.ARQ_BIND_STARTED, age=60)
    _arq(db, _uuid(2), states.ARQ_BIND_STARTED, age=7200)
    _arq(db, _uuid(3), states.ARQ_DELETING, age=3600)
    _arq(db, _uuid(4), states.ARQ_BOUND, age=86400)
    result = checks._check_stuck_arqs()
    assert result.code == Code.WARNING
    assert result.details.startswith('Accelerator requests in BindStarted')
    # Oldest first.
    assert '%s, %s.' % (_uuid(2), _uuid(3)) in result.details
    assert _uuid(1) not in result.details and _uuid(4) not in result.details
    assert 'more than 600 seconds' in result.details
    assert 'restart a cyborg-conductor' in result.details


def test_stuck_arqs_name_at_most_ten(checks, db, override):
    override('arq_stuck_after', 600, group='conductor')
    for number in range(12):
        _arq(db, _uuid(number), states.ARQ_BIND_STARTED,
             age=86400 - number)
    result = checks._check_stuck_arqs()
    assert _uuid(9) in result.details and _uuid(10) not in result.details
    assert 'and 2 more' in result.details


# --- Orphaned accelerator requests -----------------------------------------

def _profile_arq(engine, uuid, age, **values):
    """An ARQ of a device profile, ``age`` seconds old."""
    created = _now() - datetime.timedelta(seconds=age)
    with engine.begin() as conn:
        profile = conn.execute(sa.select(models.DeviceProfile.id)).scalar()
        if profile is None:
            profile = conn.execute(sa.insert(
                models.DeviceProfile.__table__).values(
                    uuid=_uuid(999), name='dp', profile_json='{}')
            ).inserted_primary_key[0]
        row = dict(uuid=uuid, state=states.ARQ_INITIAL,
                   device_profile_id=profile, device_profile_group_id=0,
                   created_at=created)
        row.update(values)
        conn.execute(sa.insert(models.AcceleratorRequest.__table__)
                     .values(**row))


def test_no_orphan_arqs(checks, db, override):
    override('orphan_arq_age', 3600, group='conductor')
    _profile_arq(db, _uuid(1), age=60)
    _profile_arq(db, _uuid(2), age=7200, state=states.ARQ_BOUND,
                 instance_uuid=_uuid(100))
    assert checks._check_orphan_arqs().code == Code.SUCCESS


def test_orphan_arqs(checks, db, override):
    override('orphan_arq_age', 3600, group='conductor')
    _profile_arq(db, _uuid(1), age=60)
    _profile_arq(db, _uuid(2), age=7200)
    _profile_arq(db, _uuid(3), age=4000)
    result = checks._check_orphan_arqs()
    assert result.code == Code.WARNING
    assert result.details.startswith(
        '2 accelerator requests are Initial with no instance for more than '
        '3600 seconds, the oldest for 72')
    assert 'Quotas do not count them' in result.details


def test_orphan_arqs_while_removal_is_off(checks, db, override):
    override('orphan_arq_age', 0, group='conductor')
    _profile_arq(db, _uuid(1), age=60)
    _profile_arq(db, _uuid(2), age=7200)
    result = checks._check_orphan_arqs()
    assert result.code == Code.WARNING
    assert result.details.startswith('1 accelerator requests')
    assert 'orphan_arq_age is 0, so nothing removes them' in result.details


# --- Policy file format ------------------------------------------------------

@pytest.fixture
def policy(tmp_path, override):
    """Point [oslo_policy] at files under ``tmp_path``."""
    policy_opts.set_defaults(status.CONF)
    directory = tmp_path / 'policy.d'
    directory.mkdir()
    override('policy_file', str(tmp_path / 'policy.yaml'),
             group='oslo_policy')
    override('policy_dirs', [str(directory)], group='oslo_policy')
    return tmp_path


def test_no_policy_file(policy):
    assert status.Checks()._check_policy_format().code == Code.SUCCESS


def test_yaml_policy_files(policy):
    (policy / 'policy.yaml').write_text('"device:get_all": "rule:admin"\n')
    (policy / 'policy.d' / 'extra.yaml').write_text('{}\n# yaml\n')
    assert status.Checks()._check_policy_format().code == Code.SUCCESS


def test_json_policy_file(policy, override):
    path = policy / 'policy.json'
    path.write_text(json.dumps({'device:get_all': 'rule:admin'}))
    override('policy_file', str(path), group='oslo_policy')
    result = status.Checks()._check_policy_format()
    assert result.code == Code.WARNING
    assert str(path) in result.details
    assert 'oslopolicy-convert-json-to-yaml' in result.details


def test_json_file_in_a_policy_directory(policy):
    (policy / 'policy.d' / 'a.yaml').write_text('"a": ""\n')
    (policy / 'policy.d' / 'b.json').write_text('{"b": ""}')
    (policy / 'policy.d' / '.hidden.json').write_text('{}')
    result = status.Checks()._check_policy_format()
    assert result.code == Code.WARNING
    assert str(policy / 'policy.d' / 'b.json') in result.details
    assert 'a.yaml' not in result.details and 'hidden' not in result.details


def test_policy_rules_fine(policy):
    (policy / 'policy.yaml').write_text(
        '"cyborg:device:get_all": "rule:admin_api"\n')
    assert status.Checks()._check_policy_rules().code == Code.SUCCESS


def test_policy_file_that_does_not_parse(policy):
    path = policy / 'policy.d' / 'broken.yaml'
    path.write_text('"cyborg:device:get_all": "rule:admin_api"\n'
                    '"cyborg:device:get_one": [unclosed\n')
    result = status.Checks()._check_policy_rules()
    assert result.code == Code.FAILURE
    assert '%s line 3' % path in result.details


def test_override_naming_an_undefined_rule(policy):
    (policy / 'policy.yaml').write_text(
        '"cyborg:device:get_all": "rule:admin_ap or rule:admin_api"\n')
    result = status.Checks()._check_policy_rules()
    assert result.code == Code.WARNING
    assert 'admin_ap (in cyborg:device:get_all)' in result.details
    assert '"default" rule, which only administrators pass' in (
        result.details)


# --- All of them -------------------------------------------------------------

def test_all_checks(checks, db, policy, capsys):
    _service(db, 'ctl', CONDUCTOR, CONDUCTOR_RPC)
    assert checks.check() == Code.SUCCESS
    _service(db, 'node1', AGENT, '1.0')
    assert status.Checks().check() == Code.WARNING
    out = capsys.readouterr().out
    for name, _check in status.Checks._upgrade_checks:
        assert 'Check: %s' % name in out


# --- cyborg-status upgrade check, as operators run it ------------------------

def _status(tmp_path, connection, policy_file=None):
    """Run the command; returns its exit code and ``{check: (code,
    details)}``."""
    sections = {'DEFAULT': {'state_path': str(tmp_path)},
                'database': {'connection': connection}}
    if policy_file:
        sections['oslo_policy'] = {'policy_file': policy_file}
    conf = processes.write_config(tmp_path / 'cyborg.conf', sections)
    result = processes.run('cyborg-status', '--config-file', conf,
                           'upgrade', 'check', '--json', timeout=120)
    assert 'Traceback' not in result.stdout + result.stderr, result.stderr
    checks = json.loads(result.stdout)['checks']
    return result.returncode, {c['check']: (c['result'], c['details'])
                               for c in checks}


@pytest.fixture
def sqlite(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cyborg.sqlite')
    engine = sa.create_engine(url)
    yield url, engine
    engine.dispose()


def test_command_without_database(tmp_path):
    code, results = _status(tmp_path,
                            'sqlite:////nonexistent/dir/cyborg.sqlite')
    assert code == Code.FAILURE
    assert results['Database schema'][0] == Code.FAILURE
    assert '[database] connection' in results['Database schema'][1]


def test_command_on_an_empty_database(tmp_path, sqlite):
    code, results = _status(tmp_path, sqlite[0])
    assert code == Code.FAILURE
    assert 'no Cyborg schema' in results['Database schema'][1]


def test_command_on_an_old_schema(tmp_path, sqlite):
    url, engine = sqlite
    migration.upgrade(OLDER_REVISION, engine=engine)
    code, results = _status(tmp_path, url)
    assert code == Code.FAILURE
    assert OLDER_REVISION in results['Database schema'][1]
    assert results['Service RPC versions'][0] == Code.WARNING


def test_command_warns_and_succeeds(tmp_path, sqlite):
    url, engine = sqlite
    migration.upgrade('head', engine=engine)
    # A JSON policy file next to the configuration file, named relatively.
    (tmp_path / 'policy.json').write_text('{"device:get_all": "rule:admin"}')
    code, results = _status(tmp_path, url, policy_file='policy.json')
    assert code == Code.WARNING
    assert results['Conductor liveness'][0] == Code.WARNING
    assert results['Policy file format'][0] == Code.WARNING
    assert str(tmp_path / 'policy.json') in results['Policy file format'][1]

    _service(engine, 'ctl', CONDUCTOR, CONDUCTOR_RPC)
    code, results = _status(tmp_path, url)
    assert code == Code.SUCCESS, results
    assert set(results) == {name for name, _c in status.Checks._upgrade_checks}
