"""A pinned deployment of processes, against servers of the pinned versions."""

import contextlib
import os
import stat
import sys
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from cyborg.tests import deployments
from cyborg.tests import processes
from cyborg.tests.functional.test_nova_sequence import Cloud
from cyborg.tests.functional.test_nova_sequence import Nova
from cyborg.tests.functional.test_nova_sequence import _boot
from cyborg.tests.functional.test_nova_sequence import _check_events

pytestmark = pytest.mark.functional

# NOTE(tests): the versions the release before /v1 accelerators served
# (conductor 1.5 and agent 1.3 were bumped in the same change).
CONDUCTOR_PIN = '1.5'
AGENT_PIN = '1.3'
PINS = {'conductor': CONDUCTOR_PIN, 'agent': AGENT_PIN}
# NOTE(tests): both call conductor RPC 1.6 methods (list_services,
# list_accelerators).
NEWER = [('/v2/services', {'OpenStack-API-Version': 'accelerator 2.5'}),
         ('/v1/accelerators', {})]
OPERATOR = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
            'X-User-Id': 'operator'}

# NOTE(tests): the console script of a service, but its manager serves
# only the pinned RPC version, as the older release's did: a newer
# message fails with UnsupportedVersion there instead of being served.
OLD_SERVICE = '''#!{python}
import sys

# Cyborg first: importing it picks oslo.service's backend.
from cyborg.cmd import {module} as cmd
import oslo_messaging

cmd.manager.{manager}.target = oslo_messaging.Target(version={version!r})
sys.exit(cmd.main())
'''
OLD = {'cyborg-conductor': ('conductor', 'ConductorManager', CONDUCTOR_PIN),
       'cyborg-agent': ('agent', 'AgentManager', AGENT_PIN)}


def _old_scripts(directory):
    """{console script: an executable that runs it as the older release}."""
    scripts = {}
    for name, (module, manager, version) in OLD.items():
        path = os.path.join(str(directory), 'old-%s' % name)
        with open(path, 'w') as out:
            out.write(OLD_SERVICE.format(python=sys.executable, module=module,
                                         manager=manager, version=version))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        scripts[name] = path
    return scripts


@pytest.fixture(scope='module')
def nova_api():
    with deployments.FakeNova() as fake:
        yield fake


@pytest.fixture(scope='module')
def deployment(nova_api, tmp_path_factory):
    """services() with every client pinned and the conductor and agent
    serving only the pinned versions."""
    tmp_path = tmp_path_factory.mktemp('pinned')
    old = _old_scripts(tmp_path)
    real_script = processes.script
    with contextlib.ExitStack() as stack:
        # NOTE(tests): services() starts each service by its console
        # script; only while it does are two of them the older release's.
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(processes, 'script',
                          lambda name: old.get(name) or real_script(name))
            found = stack.enter_context(deployments.services(
                tmp_path, handles=4, sections={
                    'upgrade_levels': PINS, 'nova': nova_api.section(),
                    # NOTE(tests): MDEV handles make a bind and an unbind
                    # call the agent (prepare_handle, release_handle).
                    'fake_driver': {'attach_type': 'MDEV'}}))
        yield found


@pytest.fixture(scope='module')
def cloud(deployment):
    return Cloud(deployment)


def _rpc_versions(deployment):
    engine = sa.create_engine(deployment.db_url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(sa.text(
                'SELECT `binary`, rpc_version FROM services')).all())
    finally:
        engine.dispose()


def test_services_run_the_pinned_versions(deployment):
    for name in OLD:
        assert 'old-%s' % name in deployment.process(name).command[0]
    assert _rpc_versions(deployment) == {
        'cyborg-conductor': CONDUCTOR_PIN, 'cyborg-agent': AGENT_PIN}


def test_agent_reports_reach_the_conductor(deployment, cloud):
    found = deployment.deployables()
    assert [d['name'] for d in found] == ['%s_FakeDevice' % deployment.host]
    assert found[0]['rp_uuid'] == cloud.provider
    devices = cloud.operator.get('/devices').json()['devices']
    assert [d['hostname'] for d in devices] == [deployment.host]
    agent = deployment.process('cyborg-agent')
    mark = len(agent.log())

    def heard():
        agents = cloud.operator.get(
            '/agents', headers={'OpenStack-API-Version': 'accelerator 2.4'})
        (one,) = agents.json()['agents']
        return one if one['status'] == 'up' else None

    before = processes.wait_for(heard, 30, what='the agent up')
    # The periodic reports go on (heartbeats of the unchanged inventory).
    processes.wait_for(lambda: heard()['last_heartbeat'] !=
                       before['last_heartbeat'], 30,
                       what='another agent heartbeat')
    for proc in (agent, deployment.conductor):
        text = proc.log()[mark if proc is agent else proc.offset:]
        for bad in ('UnsupportedVersion', 'RPCVersionCapped', 'ERROR'):
            assert bad not in text, '%s logged %s:\n%s' % (
                proc.name, bad, text[-4000:])


def test_nova_boot_sequence(deployment, cloud, nova_api):
    agent = deployment.process('cyborg-agent')
    nova = Nova(cloud)
    instance = str(uuid.uuid4())
    nova_api.on_host.add(instance)
    resolved, bindings = _boot(cloud, nova, cloud.profile(1, 1), instance)
    assert {a['uuid'] for a in resolved} == set(bindings)
    assert {(a['state'], a['device_rp_uuid'], a['attach_handle_type'])
            for a in resolved} == {('Bound', cloud.provider, 'MDEV')}
    # The agent got prepare_handle in its 1.3 form, without the ARQ.
    assert agent.log().count('Prepared handle') == 2
    assert 'for ARQ None' in agent.log()
    _check_events(nova_api, instance, {u: 'completed' for u in bindings})
    cloud.wait_logged('for instance %s (HTTP 200)' % instance)
    for arq in resolved:
        got = nova.arq(arq['uuid'])
        assert (got['state'], got['device_rp_uuid']) == (
            'Bound', cloud.provider)

    resp = nova.client.patch('/accelerator_requests', raise_exc=False,
                             json={u: [{'op': 'remove', 'path': p} for p in
                                       ('/hostname', '/device_rp_uuid',
                                        '/instance_uuid')]
                                   for u in bindings})
    assert resp.status_code == 202, resp.text
    unbound = [nova.arq(u) for u in bindings]
    assert {a['state'] for a in unbound} == {'Unbound'}
    processes.wait_for(lambda: agent.log().count('Releasing handle') == 2,
                       30, what='the agent to release both handles')
    resp = nova.delete_arqs_by_uuid(list(bindings))
    assert resp.status_code == 204, resp.text
    cloud.unclaim(instance)
    assert nova.arqs_for_instance(instance) == []


@pytest.mark.parametrize('path, headers', NEWER)
def test_newer_than_the_pin_is_refused(deployment, path, headers):
    api = deployment.process('cyborg-api')
    mark = len(api.log())
    started = time.monotonic()
    resp = requests.get(deployment.url + path, timeout=30,
                        headers=dict(OPERATOR, **headers))
    assert time.monotonic() - started < 5
    assert resp.status_code == 409, resp.text
    message = resp.json()['error_message']
    assert 'conductor RPC API 1.6' in message, message
    assert '[upgrade_levels] conductor pins it at 1.5' in message, message
    assert 'Traceback' not in message
    assert 'Traceback' not in api.log()[mark:]

