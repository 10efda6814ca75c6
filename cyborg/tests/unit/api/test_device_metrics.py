"""GET /v2/devices/{uuid}/metrics (2.6): API -> conductor -> agent.

A real conductor and agent answer over the fake transport; the fake driver
samples what the test sets.
"""

import datetime
import time

import pytest

from cyborg import context as cyborg_context
from cyborg.agent import manager as agent_manager
from cyborg.api import errors
from cyborg.db import api as dbapi
from cyborg.db import devices as device_db
from cyborg.drivers import fake
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

SAMPLE = {'utilization_ratio': 0.75, 'memory_used_bytes': 1024.0,
          'aer_fatal_total': 0.0}
V26 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.6'})
V212 = dict(ADMIN, **WITH_CODES)


@pytest.fixture
def device(stack, api, monkeypatch):
    """The uuid of node1's fake device, its agent reporting."""
    monkeypatch.setattr(fake.FakeDriver, 'metrics',
                        lambda self, device: dict(SAMPLE))
    agent = stack()
    agent.report()
    (found,) = dbapi.devices.list(cyborg_context.get_admin_context())
    return found.uuid


def test_metrics_at_2_6(api, device):
    before = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0)
    body = api.get('/v2/devices/%s/metrics' % device, headers=V26).json
    assert list(body) == ['uuid', 'hostname', 'sampled_at', 'health',
                          'metrics']
    assert body['uuid'] == device and body['hostname'] == 'node1'
    assert body['health'] == 'ok'
    assert body['metrics'] == SAMPLE
    taken = datetime.datetime.fromisoformat(body['sampled_at'])
    assert taken.utcoffset() == datetime.timedelta(0)
    assert before <= taken <= datetime.datetime.now(datetime.timezone.utc)


@pytest.mark.parametrize('version', ['2.0', '2.4', '2.5'])
def test_no_metrics_before_2_6(api, device, version):
    response = api.get('/v2/devices/%s/metrics' % device, status=404,
                       headers=dict(ADMIN, **{
                           'OpenStack-API-Version':
                           'accelerator %s' % version}))
    assert '2.6' in fault(response)['faultstring']


def test_unknown_device_is_404(api, device):
    missing = '5b2d1f1e-0c8a-4a51-9d2c-000000000000'
    response = api.get('/v2/devices/%s/metrics' % missing, status=404,
                       headers=V212)
    assert code(response) == 'cyborg.device.not_found'
    api.get('/v2/devices/not-a-uuid/metrics', status=404, headers=V26)


def test_other_sub_resources_are_404(api, device):
    api.get('/v2/devices/%s/stats' % device, status=404, headers=V26)


def test_policy_is_a_managers_or_admins(api, device):
    reader = dict(READER, **{'OpenStack-API-Version': 'accelerator 2.6'})
    api.get('/v2/devices/%s/metrics' % device, status=403, headers=reader)


def test_a_lost_device_is_409(api, device):
    assert device_db.swap_status(cyborg_context.get_admin_context(), device,
                                 'inactive', 'lost')
    response = api.get('/v2/devices/%s/metrics' % device, status=409,
                       headers=V212)
    assert code(response) == 'cyborg.device.no_metrics'


def test_a_device_its_agent_no_longer_finds_is_409(api, device):
    context = cyborg_context.get_admin_context()
    (cpid,) = dbapi.controlpath_ids.list(context)
    # NOTE(tests): as if the card moved slots since the conductor last
    # heard from the agent.
    dbapi.controlpath_ids.update(context, cpid.uuid, {
        'cpid_info': '{"bus": "77", "device": "00", "domain": "0000", '
                     '"function": "0"}'})
    response = api.get('/v2/devices/%s/metrics' % device, status=409,
                       headers=V26)
    found = fault(response)['faultstring']
    assert device in found and 'node1 did not find it' in found


def test_a_silent_agent_is_503_with_retry_after(api, device, override,
                                                monkeypatch):
    override('rpc_timeout', 2, group='api')
    monkeypatch.setattr(agent_manager.AgentManager, 'device_metrics',
                        lambda self, context, device_key: time.sleep(4))
    response = api.get('/v2/devices/%s/metrics' % device, status=503,
                       headers=V212)
    assert response.headers['Retry-After'] == str(errors.RETRY_AFTER)
    assert code(response) == 'cyborg.agent.unavailable'


def test_conductor_pinned_below_1_9_is_refused(api, device, override):
    override('conductor', '1.8', group='upgrade_levels')
    response = api.get('/v2/devices/%s/metrics' % device, status=409,
                       headers=V212)
    assert code(response) == 'cyborg.rpc.version_capped'
    assert '1.9' in fault(response)['faultstring']
