"""``POST /v2/devices/{uuid}/activate`` and ``GET /v2/agents`` (2.4)."""

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import version_header

V24 = dict(ADMIN, **version_header('accelerator 2.4'))
V23 = dict(ADMIN, **version_header('accelerator 2.3'))


def _device(api):
    (device,) = api.get('/v2/devices', headers=V24).json['devices']
    return device


def test_activate_over_the_conductor_and_agent(api, stack):
    stack().report()
    device = _device(api)
    assert device['status'] == 'inactive'
    assert device['status_reason'] is None
    assert device['services'] == ['fpga.function:fake']
    url = '/v2/devices/%s/activate' % device['uuid']
    response = api.post(url, headers=V24)
    assert response.status_int == 200
    assert response.json['status'] == 'ready'
    again = api.post(url, headers=dict(ADMIN, **WITH_CODES),
                     expect_errors=True)
    assert again.status_int == 409
    assert code(again) == 'cyborg.device.bad_state'


def test_activate_needs_2_4_and_admin(api, stack):
    stack().report()
    url = '/v2/devices/%s/activate' % _device(api)['uuid']
    assert api.post(url, headers=V23, expect_errors=True).status_int == 404
    reader = dict(READER, **version_header('accelerator 2.4'))
    assert api.post(url, headers=reader, expect_errors=True).status_int == 403


def test_activate_unknown_device_or_action(api, stack):
    stack().report()
    missing = api.post('/v2/devices/%s/activate'
                       % '00000000-0000-0000-0000-000000000000',
                       headers=V24, expect_errors=True)
    assert missing.status_int == 404
    assert api.post('/v2/devices/not-a-uuid/activate', headers=V24,
                    expect_errors=True).status_int == 404
    url = '/v2/devices/%s/explode' % _device(api)['uuid']
    assert api.post(url, headers=V24, expect_errors=True).status_int == 404


def test_fields_hidden_below_2_4(api, stack):
    stack().report()
    (device,) = api.get('/v2/devices', headers=V23).json['devices']
    assert 'status' in device
    assert 'status_reason' not in device and 'services' not in device


def test_agents_list(api, stack, override):
    override('enabled_drivers', ['fake_driver'], group='agent')
    stack().report()
    agents = api.get('/v2/agents', headers=V24).json['agents']
    assert len(agents) == 1
    (agent,) = agents
    assert agent['host'] == 'node1' and agent['status'] == 'up'
    assert agent['drivers'] == ['fake_driver']
    assert agent['report_interval'] == 3600
    assert agent['last_heartbeat'].endswith('+00:00')
    assert api.get('/v2/agents', headers=V23,
                   expect_errors=True).status_int == 404


def test_dead_agent_is_down_after_three_intervals(api, stack, db):
    import datetime

    import sqlalchemy as sa

    from cyborg.db import models

    stack().report()
    long_ago = (datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(seconds=3 * 3600 + 5))
    with db.begin() as conn:
        conn.execute(sa.update(models.Service.__table__)
                     .where(models.Service.binary == 'cyborg-agent')
                     .values(last_seen_up=long_ago))
    (agent,) = api.get('/v2/agents', headers=V24).json['agents']
    assert agent['status'] == 'down'


def test_disable_and_enable_as_upstream(api, stack):
    stack().report()
    uuid = _device(api)['uuid']
    base = '/v2/devices/%s/' % uuid
    # Served at every microversion, as upstream serves them: openstacksdk
    # sends no version header.
    response = api.post(base + 'disable', headers=ADMIN)
    assert response.status_int == 204 and response.body == b''
    shown = api.get('/v2/devices/' + uuid, headers=V24).json
    assert shown['status'] == 'maintaining'
    # No body: pecan (upstream's framework too) answers such a 200 as 204.
    response = api.post(base + 'disable', headers=V23)
    assert response.status_int == 204 and response.body == b''
    assert api.get('/v2/devices/' + uuid, headers=V23).json[
        'status'] == 'maintaining'
    # Idempotent, as upstream's.
    assert api.post(base + 'disable', headers=V23).status_int == 204
    # Enabling a device that was inactive activates it.
    assert api.post(base + 'enable', headers=V23).body == b''
    assert _device(api)['status'] == 'ready'
    api.post(base + 'disable', headers=V23)
    api.post(base + 'enable', headers=V23)
    assert _device(api)['status'] == 'ready'
    reader = dict(READER, **version_header('accelerator 2.3'))
    assert api.post(base + 'disable', headers=reader,
                    expect_errors=True).status_int == 403
