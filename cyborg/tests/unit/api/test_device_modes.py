"""Partition modes in the API (2.9): devices show mode and modes, and
POST /v2/devices/{uuid}/mode switches one.

A real conductor answers over the fake transport; the agent's side of the
switch (the driver and Placement's reshaper) is tested with the agent.
"""

import json

import pytest
import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import agent_rpcapi
from cyborg.db import api as dbapi
from cyborg.db import models
from cyborg.tests import arq_rows
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault

MODES = ['passthrough', 'vgpu:nvidia-222']
MANAGER = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p-tenant',
           'X-User-Id': 'u-tenant'}


def _v(version, headers=ADMIN):
    return dict(headers, **{'OpenStack-API-Version': 'accelerator %s'
                            % version})


@pytest.fixture
def device(stack, api, db, monkeypatch):
    """node1's fake device, ready, as if its driver offered MODES; the
    agent's switch records its calls and sets the mode as its report
    would."""
    stack('node1').report()
    context = cyborg_context.get_admin_context()
    (found,) = dbapi.devices.list(context)
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(
            status='ready', mode='passthrough', modes=json.dumps(MODES)))
    calls = []

    def set_device_mode(self, context, host, driver_name, address, mode,
                        timeout=None):
        calls.append((host, driver_name, address, mode))
        with db.begin() as conn:
            conn.execute(sa.update(models.Device).values(mode=mode))

    monkeypatch.setattr(agent_rpcapi.AgentAPI, 'set_device_mode',
                        set_device_mode, raising=False)
    found.calls = calls
    return found


def _mode(api, uuid, body, status=200, headers=ADMIN, version='2.9'):
    return api.post_json('/v2/devices/%s/mode' % uuid, body,
                         headers=_v(version, headers), status=status)


def test_devices_show_their_modes_from_2_9(api, device):
    one = api.get('/v2/devices/%s' % device.uuid, headers=_v('2.9')).json
    assert (one['mode'], one['modes']) == ('passthrough', MODES)
    (listed,) = api.get('/v2/devices', headers=_v('2.9')).json['devices']
    assert (listed['mode'], listed['modes']) == ('passthrough', MODES)
    assert list(listed) == list(one)
    for version in ('2.6', '2.8'):
        old = api.get('/v2/devices/%s' % device.uuid,
                      headers=_v(version)).json
        assert 'mode' not in old and 'modes' not in old
        (row,) = api.get('/v2/devices', headers=_v(version)).json['devices']
        assert 'mode' not in row and 'modes' not in row


def test_switching_the_mode(api, device):
    body = _mode(api, device.uuid, {'mode': 'vgpu:nvidia-222'}).json
    assert (body['mode'], body['status']) == ('vgpu:nvidia-222', 'ready')
    ((host, _driver, address, mode),) = device.calls
    assert (host, mode) == ('node1', 'vgpu:nvidia-222')
    assert address.startswith('0000:')


def test_a_mode_not_offered_is_a_400(api, device):
    response = _mode(api, device.uuid, {'mode': 'vgpu:nvidia-1'},
                     status=400, version='2.12')
    assert code(response) == 'cyborg.device.mode_not_offered'
    assert fault(response)['faultstring'].endswith(
        'it offers passthrough, vgpu:nvidia-222.')


@pytest.mark.parametrize('body', [None, {}, {'mode': ''}, {'mode': 3},
                                  {'mode': 'passthrough', 'now': True},
                                  ['passthrough']])
def test_bad_bodies_are_400s(api, device, body):
    if body is None:
        api.post('/v2/devices/%s/mode' % device.uuid, headers=_v('2.9'),
                 status=400)
    else:
        _mode(api, device.uuid, body, status=400)
    assert device.calls == []


def test_bound_arqs_are_a_409_that_lists_them(api, device, db):
    (arq,) = arq_rows.initial(db, 1)
    arq_rows.bind(cyborg_context.get_admin_context(), db, [arq])
    response = _mode(api, device.uuid, {'mode': 'vgpu:nvidia-222'},
                     status=409, version='2.12')
    assert code(response) == 'cyborg.device.mode_in_use'
    assert arq in fault(response)['faultstring']
    assert device.calls == []


def test_a_failed_switch_is_a_409_with_the_reason(api, device,
                                                  monkeypatch):
    def refuse(self, context, host, driver_name, address, mode,
               timeout=None):
        raise exception.DeviceModeSwitchFailed(
            uuid=address, mode=mode, reason='Placement refused the reshape')

    monkeypatch.setattr(agent_rpcapi.AgentAPI, 'set_device_mode', refuse,
                        raising=False)
    response = _mode(api, device.uuid, {'mode': 'vgpu:nvidia-222'},
                     status=409, version='2.12')
    assert code(response) == 'cyborg.device.mode_switch_failed'
    shown = api.get('/v2/devices/%s' % device.uuid, headers=_v('2.9')).json
    assert (shown['mode'], shown['status']) == ('passthrough', 'ready')


def test_only_admins_switch(api, device):
    response = _mode(api, device.uuid, {'mode': 'vgpu:nvidia-222'},
                     headers=MANAGER, status=403, version='2.12')
    assert code(response) == 'cyborg.policy.not_allowed'


def test_before_2_9_there_is_no_mode_action(api, device):
    response = _mode(api, device.uuid, {'mode': 'vgpu:nvidia-222'},
                     version='2.8', status=404)
    assert '2.9' in fault(response)['faultstring']


def test_an_unknown_device_is_a_404(api, device):
    _mode(api, '5b2d1f1e-0c8a-4a51-9d2c-000000000000',
          {'mode': 'passthrough'}, status=404)
