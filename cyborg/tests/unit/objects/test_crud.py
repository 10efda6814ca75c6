"""Remotable object methods, run locally as in the conductor."""

import pytest

from cyborg import exception
from cyborg.objects import attribute
from cyborg.objects import base
from cyborg.objects import deployable
from cyborg.objects import device
from cyborg.objects import service

UUID1 = '359c0990-0258-44fd-8b05-fc510ac3d022'
UUID2 = '29e23349-12ee-4978-963c-11484a4ae601'


def _device(ctx, **kw):
    values = dict(uuid=UUID1, type='FPGA', vendor='0xABCD', model='m',
                  hostname='node1', status='inactive')
    values.update(kw)
    obj = device.Device(ctx, **values)
    obj.create()
    return obj


def test_create_get_list_save_destroy(db, ctx):
    dev = _device(ctx)
    assert dev.id and dev.created_at is not None
    assert device.Device.get(ctx, UUID1).vendor == '0xABCD'
    dev.status = 'ready'
    dev.save()
    assert device.Device.get(ctx, UUID1).status == 'ready'
    assert [d.uuid for d in device.Device.list(
        ctx, filters={'hostname': 'node1'})] == [UUID1]
    assert device.Device.list(ctx, filters={'hostname': 'other'}) == []
    dev.destroy()
    with pytest.raises(exception.DeviceNotFound):
        device.Device.get(ctx, UUID1)


def test_deployable_carries_its_attributes(db, ctx):
    dev = _device(ctx)
    dep = deployable.Deployable(ctx, uuid=UUID2, name='node1_x',
                                num_accelerators=2, device_id=dev.id)
    dep.create()
    assert dep.attributes_list == []
    attribute.Attribute(ctx, deployable_id=dep.id, key='rc',
                        value='FPGA').create()
    attribute.Attribute(ctx, deployable_id=dep.id, key='trait0',
                        value='CUSTOM_X').create()
    got = deployable.Deployable.get(ctx, UUID2)
    assert got.attributes_list == [{'rc': 'FPGA'}, {'trait0': 'CUSTOM_X'}]
    # Saving a deployable never writes its attributes.
    got.num_accelerators = 3
    got.save()
    assert deployable.Deployable.get(ctx, UUID2).attributes_list == \
        got.attributes_list


def test_duplicate_is_a_conflict(db, ctx):
    _device(ctx)
    with pytest.raises(exception.DuplicateEntry):
        _device(ctx)


def test_pagination(db, ctx):
    uuids = ['00000000-0000-0000-0000-%012d' % i for i in range(5)]
    for u in uuids:
        _device(ctx, uuid=u)
    first = device.Device.list(ctx, limit=2)
    assert [d.uuid for d in first] == uuids[:2]
    rest = device.Device.list(ctx, limit=10, marker=first[-1].uuid)
    assert [d.uuid for d in rest] == uuids[2:]
    with pytest.raises(exception.InvalidParameterValue):
        device.Device.list(ctx, marker='no-such-uuid')


def test_service_heartbeat(db, ctx):
    service.Service.heartbeat(ctx, 'node1', 'cyborg-agent', version='1')
    service.Service.heartbeat(ctx, 'node1', 'cyborg-agent')
    svc = service.Service.get(ctx, 'node1', 'cyborg-agent')
    assert svc.report_count == 2 and svc.is_up
    assert [s.host for s in service.Service.list(ctx)] == ['node1']


def test_no_database_outside_the_conductor(ctx, monkeypatch):
    monkeypatch.setattr(base.CyborgObject, 'dbapi', base._NoDatabase())
    with pytest.raises(exception.ObjectActionError):
        device.Device.get(ctx, UUID1)
