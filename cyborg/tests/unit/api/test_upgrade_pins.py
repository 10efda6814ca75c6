"""Pinned clients against servers that serve only an older RPC version."""

import uuid

import oslo_messaging as messaging
import pytest

from cyborg import context as cyborg_context
from cyborg import states
from cyborg.agent import manager as agent_manager
from cyborg.conductor import manager as conductor_manager
from cyborg.db import api as dbapi
from cyborg.tests import arq_rows
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.test_arqs import MEMBER
from cyborg.tests.unit.api.test_arqs import NOVA
from cyborg.tests.unit.api.test_arqs import URL
from cyborg.tests.unit.api.test_arqs import _bind_ops
from cyborg.tests.unit.api.test_arqs import _create
from cyborg.tests.unit.api.test_arqs import _wait_resolved

# NOTE(tests): the versions the release before /v1 accelerators served
# (conductor 1.5 and agent 1.3 were bumped in the same change).
CONDUCTOR_PIN = '1.5'
AGENT_PIN = '1.3'


@pytest.fixture
def pinned(monkeypatch, override):
    """Every client pinned; today's managers serve only the pinned
    versions, so a newer message fails (UnsupportedVersion) as it would
    on the older release."""
    override('conductor', CONDUCTOR_PIN, group='upgrade_levels')
    override('agent', AGENT_PIN, group='upgrade_levels')
    monkeypatch.setattr(conductor_manager.ConductorManager, 'target',
                        messaging.Target(version=CONDUCTOR_PIN))
    monkeypatch.setattr(agent_manager.AgentManager, 'target',
                        messaging.Target(version=AGENT_PIN))


@pytest.fixture
def node(pinned, stack, api, override, db):
    override('accelerators_per_device', 16, group='fake_driver')
    agent = stack('node1')
    agent.report()
    arq_rows.ready(db)
    (deployable,) = dbapi.deployables.list(cyborg_context.get_admin_context())
    api.post_json('/v2/device_profiles', [
        {'name': 'two', 'groups': [{'resources:FPGA': '2'}]},
    ], headers=ADMIN)
    return agent, deployable.rp_uuid


def test_nova_boot_sequence_under_pins(api, node):
    _agent, rp_uuid = node
    arqs = _create(api)
    instance = str(uuid.uuid4())
    api.patch_json(URL, {a['uuid']: _bind_ops(rp_uuid, instance)
                         for a in arqs}, headers=NOVA, status=202)
    bound = _wait_resolved(api, instance, headers=NOVA)
    assert {a['state'] for a in bound} == {states.ARQ_BOUND}
    one = api.get(URL + '/' + arqs[0]['uuid'], headers=NOVA).json
    assert one['state'] == states.ARQ_BOUND
    assert one['device_rp_uuid'] == rp_uuid

    api.patch_json(URL, {a['uuid']: [
        {'op': 'remove', 'path': p} for p in
        ('/hostname', '/device_rp_uuid', '/instance_uuid')] for a in arqs},
        headers=NOVA, status=202)
    unbound = api.get(URL, headers=MEMBER).json['arqs']
    assert {a['state'] for a in unbound} == {states.ARQ_UNBOUND}
    api.delete(URL + '?arqs=' + ','.join(a['uuid'] for a in arqs),
               headers=NOVA, status=204)
    assert api.get(URL, headers=MEMBER).json['arqs'] == []


def test_agent_reports_under_pins(node, ctx):
    agent, _rp_uuid = node
    # an unchanged inventory (heartbeat) and a changed one (delta)
    agent.report()
    (svc,) = [s for s in dbapi.services.list(ctx)
              if s.binary == agent_manager.BINARY]
    assert svc.rpc_version == AGENT_PIN
    (dev,) = dbapi.devices.list(ctx)
    assert dev.hostname == 'node1'
