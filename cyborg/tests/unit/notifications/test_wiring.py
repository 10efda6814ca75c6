"""The conductor's code paths emit their notifications, after the change
is committed, on the unit tests' stack (conductor and agent over the fake
transport, oslo.messaging's test notification driver)."""

import types
from unittest import mock
import uuid

import pytest

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import states
from cyborg.conductor import hostwork
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.db import api as dbapi
from cyborg.tests import arq_rows
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import version_header
from cyborg.tests.unit.api.test_arqs import MEMBER
from cyborg.tests.unit.api.test_arqs import NOVA
from cyborg.tests.unit.api.test_arqs import URL
from cyborg.tests.unit.api.test_arqs import _bind_ops
from cyborg.tests.unit.api.test_arqs import _wait_resolved
from cyborg.tests.unit.notifications import samples

V25 = dict(ADMIN, **version_header('accelerator 2.5'))


def _data(notification):
    return notification['payload']['cyborg_object.data']


def _checked(found):
    for notification in found:
        assert samples.mismatches(notification) == [], notification
    return found


@pytest.fixture
def node(stack, stack_notes, api, override):
    """An agent with one fake FPGA of 4 handles and a profile of two."""
    override('accelerators_per_device', 4, group='fake_driver')
    agent = stack('node1')
    agent.report()
    api.post_json('/v2/device_profiles', [
        {'name': 'two', 'groups': [{'resources:FPGA': '2'}]}],
        headers=ADMIN)
    return agent


def test_reports_announce_created_and_deleted_devices(node, stack_notes,
                                                      api, override, ctx):
    (created,) = _checked(stack_notes('accelerator.device.create'))
    (device,) = dbapi.devices.list(ctx)
    assert _data(created)['uuid'] == device.uuid
    assert _data(created)['hostname'] == 'node1'
    override('device_count', 2, group='fake_driver')
    api.patch_json('/v2/drivers/node1/fake_driver', {}, headers=V25)
    created = _checked(stack_notes('accelerator.device.create'))
    assert len(created) == 2
    added = _data(created[1])['uuid']
    assert added in {d.uuid for d in dbapi.devices.list(ctx)}
    override('device_count', 1, group='fake_driver')
    api.patch_json('/v2/drivers/node1/fake_driver', {}, headers=V25)
    (deleted,) = _checked(stack_notes('accelerator.device.delete'))
    assert _data(deleted)['uuid'] == added
    assert added not in {d.uuid for d in dbapi.devices.list(ctx)}
    # The agent's answer carries none of the rows announced.
    outcome = inventory.apply_report(ctx, types.SimpleNamespace(
        host='node1', devices=[]))
    assert set(outcome) == {'changed', 'generation', 'activate', 'install',
                            'devices'}
    assert len(_checked(stack_notes('accelerator.device.delete'))) == 2


def test_driver_operations_have_start_and_end_or_error(node, stack_notes,
                                                       api, override):
    api.post_json('/v2/drivers', {'host': 'node1', 'name': 'pci_driver'},
                  headers=V25, status=201)
    api.delete('/v2/drivers/node1/pci_driver', headers=V25, status=204)
    override('device_count', 2, group='fake_driver')
    api.patch_json('/v2/drivers/node1/fake_driver', {}, headers=V25)
    api.post_json('/v2/drivers', {'host': 'node1', 'name': 'fake_driver'},
                  headers=V25, status=409)
    drivers = _checked([n for n in stack_notes()
                        if n['event_type'].startswith('accelerator.driver')])
    assert [n['event_type'] for n in drivers] == [
        'accelerator.driver.install.start', 'accelerator.driver.install.end',
        'accelerator.driver.uninstall.start',
        'accelerator.driver.uninstall.end',
        'accelerator.driver.update.start', 'accelerator.driver.update.end',
        'accelerator.driver.install.start',
        'accelerator.driver.install.error']
    assert _data(drivers[1])['enabled'] is True
    assert _data(drivers[3])['enabled'] is False
    (added,) = _data(drivers[5])['changed_devices']
    assert 'already enabled' in _data(drivers[7])['reason']
    assert drivers[7]['priority'] == 'ERROR'
    assert added in {_data(n)['uuid'] for n in
                     stack_notes('accelerator.device.create')}


def test_arq_lifecycle(node, stack_notes, api, db):
    arq_rows.ready(db)
    (deployable,) = dbapi.deployables.list(
        cyborg_context.get_admin_context())
    arqs = api.post_json(URL, {'device_profile_name': 'two'},
                         headers=MEMBER, status=201).json['arqs']
    uuids = sorted(a['uuid'] for a in arqs)
    instance = str(uuid.uuid4())
    api.patch_json(URL, {a['uuid']: _bind_ops(deployable.rp_uuid, instance)
                         for a in arqs}, headers=NOVA, status=202)
    _wait_resolved(api, instance)
    api.patch_json(URL, {arqs[0]['uuid']: [
        {'op': 'remove', 'path': p} for p in
        ('/hostname', '/device_rp_uuid', '/instance_uuid')]},
        headers=NOVA, status=202)
    api.delete(URL + '?instance=' + instance, headers=NOVA, status=204)
    api.delete(URL + '?arqs=' + arqs[0]['uuid'], headers=NOVA, status=204)
    found = _checked([n for n in stack_notes()
                      if n['event_type'].startswith('accelerator.arq')])
    by_type = {}
    for notification in found:
        by_type.setdefault(notification['event_type'], []).append(
            _data(notification))
    assert sorted(by_type) == [
        'accelerator.arq.bind.end', 'accelerator.arq.bind.start',
        'accelerator.arq.create', 'accelerator.arq.delete',
        'accelerator.arq.unbind']
    for event_type in ('create', 'bind.start', 'bind.end', 'delete'):
        assert sorted(d['uuid'] for d in by_type[
            'accelerator.arq.' + event_type]) == uuids, event_type
    assert {d['state'] for d in by_type['accelerator.arq.bind.end']} == {
        states.ARQ_BOUND}
    assert {d['instance_uuid'] for d in
            by_type['accelerator.arq.bind.end']} == {instance}
    (unbound,) = by_type['accelerator.arq.unbind']
    assert unbound['uuid'] == arqs[0]['uuid']
    assert unbound['state'] == states.ARQ_UNBOUND
    assert unbound['instance_uuid'] == instance
    # Each ARQ is created before its bind starts, bound before unbound.
    order = [(n['event_type'], _data(n)['uuid']) for n in found]
    first = arqs[0]['uuid']
    assert (order.index(('accelerator.arq.create', first)) <
            order.index(('accelerator.arq.bind.start', first)) <
            order.index(('accelerator.arq.bind.end', first)) <
            order.index(('accelerator.arq.unbind', first)) <
            order.index(('accelerator.arq.delete', first)))


def test_a_bind_without_a_free_handle_is_an_error(node, stack_notes, api,
                                                  db):
    arq_rows.ready(db)
    (deployable,) = dbapi.deployables.list(
        cyborg_context.get_admin_context())
    instance = str(uuid.uuid4())
    arqs = []
    for _ in range(3):
        arqs += api.post_json(URL, {'device_profile_name': 'two'},
                              headers=MEMBER, status=201).json['arqs']
    api.patch_json(URL, {a['uuid']: _bind_ops(deployable.rp_uuid, instance)
                         for a in arqs}, headers=NOVA, status=202)
    resolved = _wait_resolved(api, instance)
    failed = {a['uuid'] for a in resolved
              if a['state'] == states.ARQ_BIND_FAILED}
    assert len(failed) == 2
    errors = _checked(stack_notes('accelerator.arq.bind.error'))
    assert {_data(n)['uuid'] for n in errors} == failed
    assert {n['priority'] for n in errors} == {'ERROR'}


def test_operator_status_changes_are_announced(node, stack_notes, ctx):
    (device,) = dbapi.devices.list(ctx)
    lifecycle.disable(ctx, device.uuid)
    (change,) = _checked(stack_notes('accelerator.device.status_change'))
    assert _data(change)['old_status'] == states.DEVICE_INACTIVE
    assert _data(change)['status'] == states.DEVICE_MAINTAINING
    assert _data(change)['status_reason'] == 'maintenance; was inactive'


def test_programming_start_end_and_error(stack_notes, db, ctx, monkeypatch):
    """hostwork's programming, with the agent and the database mocked."""
    target = {'uuid': str(uuid.uuid4()), 'name': 'node1_0000:5e:00.0',
              'host': 'node1', 'driver_name': 'intel_fpga',
              'cpid': ['PCI', '{}'], 'in_use': 0, 'bitstream_id': None}
    stored = []
    monkeypatch.setattr(hostwork.deployable_db, 'set_bitstream',
                        lambda context, uuid, image: stored.append(image))
    agent_api = mock.Mock()
    image = str(uuid.uuid4())
    hostwork._program(ctx, target, image, agent_api, arq_uuid='a-1')
    agent_api.program.side_effect = exception.DriverError(
        driver='intel_fpga', reason='fpgaconf exited 1')
    with pytest.raises(exception.ProgrammingFailed):
        hostwork._program(ctx, target, image, agent_api)
    found = _checked([n for n in stack_notes()
                      if 'program' in n['event_type']])
    assert [n['event_type'] for n in found] == [
        'accelerator.deployable.program.start',
        'accelerator.deployable.program.end',
        'accelerator.deployable.program.start',
        'accelerator.deployable.program.error']
    assert stored == [image]
    assert _data(found[1])['arq_uuid'] == 'a-1'
    assert _data(found[2])['arq_uuid'] is None
    assert 'fpgaconf exited 1' in _data(found[3])['reason']


def test_notifications_off_change_nothing(node, api, override, stack_notes):
    override('driver', [], group='oslo_messaging_notifications')
    arqs = api.post_json(URL, {'device_profile_name': 'two'},
                         headers=MEMBER, status=201).json['arqs']
    api.delete(URL + '?arqs=' + ','.join(a['uuid'] for a in arqs),
               headers=NOVA, status=204)
    assert [n for n in stack_notes()
            if n['event_type'].startswith('accelerator.arq')] == []


def test_a_v1_attach_to_an_instance_binds_as_nova_does(
        stack, stack_notes, api, placement, override):
    override('auto_activate_new_devices', True, group='conductor')
    stack('node1', placement=placement).report()
    (item,) = api.get('/v1/accelerators', headers=ADMIN).json['accelerator']
    resp = api.put_json('/v1/accelerators/' + item['uuid'],
                        {'instance_uuid': str(uuid.uuid4())},
                        headers={'X-Roles': 'manager', 'X-Project-Id': 'p1',
                                 'X-User-Id': 'u1'})
    (attached,) = resp.json['attachments']
    found = _checked([n for n in stack_notes()
                      if n['event_type'].startswith('accelerator.arq.')])
    assert [(n['event_type'], _data(n)['uuid']) for n in found] == [
        ('accelerator.arq.bind.start', attached['arq_uuid']),
        ('accelerator.arq.bind.end', attached['arq_uuid'])]
    assert _data(found[1])['instance_uuid'] == attached['instance_uuid']
