"""Every emit helper against its documented sample, and the samples
against the payload classes (oslo.versionedobjects reads each back)."""

import uuid

import pytest

from cyborg import objects
from cyborg.notifications import arq
from cyborg.notifications import device
from cyborg.notifications import driver
from cyborg.notifications import maintenance
from cyborg.notifications import program
from cyborg.objects import base as objects_base
from cyborg.tests.unit.notifications import samples


def _uuid():
    return str(uuid.uuid4())


def _device(**values):
    found = {'uuid': _uuid(), 'type': 'GPU', 'vendor': '10de',
             'model': '20b5', 'hostname': 'node7',
             'driver_name': 'nvidia_gpu', 'status': 'ready',
             'status_reason': 'partly readable: power',
             'std_board_info': '{}', 'vendor_board_info': '{}'}
    found.update(values)
    return found


def _arq(**values):
    found = {'uuid': _uuid(), 'state': 'Bound', 'device_profile_name': 'p',
             'device_profile_group_id': 1, 'hostname': 'node7',
             'device_rp_uuid': _uuid(), 'instance_uuid': _uuid(),
             'project_id': 'p1', 'attach_handle_type': 'MDEV',
             'attach_handle_uuid': _uuid()}
    found.update(values)
    return found


def _emit_every_kind():
    """One call of each helper, with values other than the samples'."""
    target = {'uuid': _uuid(), 'name': 'node7_0000:3b:00.0',
              'host': 'node7', 'driver_name': 'xilinx_fpga',
              'bitstream_id': None}
    dep = {'uuid': target['uuid'], 'name': target['name'],
           'device_uuid': _uuid(), 'host': 'node7', 'driver_name': 'x'}
    device.created(None, _device(status='inactive'))
    device.updated(None, _device())
    device.deleted(None, _device(status_reason=None))
    device.status_changed(None, _device(), 'ready', 'maintaining',
                          'maintenance; was ready')
    device.health_changed(None, _device(), None, 'failed',
                          'link trained at 8 GT/s x8', ())
    maintenance.drain_started(None, _device(status='draining'), 1)
    maintenance.drain_ended(None, _device(status='ready'), cancelled=True)
    arq.created(None, [_arq(state='Initial', hostname=None)])
    arq.bind_started(None, [_arq(state='BindStarted')])
    arq.bind_ended(None, [_arq()], ok=True)
    arq.bind_ended(None, [_arq(state='BindFailed')], ok=False)
    arq.unbound(None, [_arq()])
    arq.deleted(None, [_arq(state='Initial')])
    for action in driver.ACTIONS:
        driver.started(None, action, 'node7', 'fake_driver')
        driver.ended(None, action, 'node7', 'fake_driver',
                     {'driver_name': 'fake', 'enabled': False,
                      'changes': {'added': [_uuid()], 'removed': [],
                                  'changed': []}})
        driver.failed(None, action, 'node7', 'fake_driver',
                      ValueError('no'))
    program.started(None, target, _uuid())
    program.ended(None, target, _uuid())
    program.failed(None, target, _uuid(), 'timeout')
    maintenance.scrub_started(None, dep)
    maintenance.scrub_ended(None, dep, ['reset'])
    maintenance.scrub_failed(None, dep, OSError('EIO'), ['reset'])


def test_every_helper_matches_its_sample(notes):
    _emit_every_kind()
    sent = notes()
    assert sorted(n['event_type'] for n in sent) == samples.names()
    for notification in sent:
        assert samples.mismatches(notification) == [], \
            notification['event_type']


@pytest.mark.parametrize('event_type', samples.names())
def test_each_sample_is_a_valid_object(event_type):
    objects.register_all()
    sample = samples.load(event_type)
    payload = objects_base.CyborgObject.obj_from_primitive(sample['payload'])
    assert payload.obj_to_primitive() == sample['payload']
    assert sample['publisher_id'].split(':')[0] in ('cyborg-conductor',
                                                    'cyborg-agent')


def test_the_check_finds_a_difference():
    sample = samples.load('accelerator.arq.bind.end')
    other = samples.load('accelerator.arq.bind.end')
    data = other['payload']['cyborg_object.data']
    assert samples.mismatches(other, sample) == []
    data['device_profile_group_id'] = '0'
    assert samples.mismatches(other, sample) == [
        'payload.device_profile_group_id: str, sample int']
    del data['device_profile_group_id']
    assert 'payload keys' in samples.mismatches(other, sample)[0]
    other['priority'] = 'ERROR'
    other['publisher_id'] = 'cyborg-api:x'
    assert len(samples.mismatches(other, sample)) == 3


def test_payload_fields_may_be_null_only_where_declared():
    sample = samples.load('accelerator.device.create')
    other = samples.load('accelerator.device.create')
    other['payload']['cyborg_object.data']['status_reason'] = 'why'
    assert samples.mismatches(other, sample) == []
    other['payload']['cyborg_object.data']['uuid'] = None
    assert samples.mismatches(other, sample) == [
        'payload.uuid is null, which it may not be']


def test_health_priority_follows_the_health():
    assert device._HEALTH_PRIORITY['failed'] == 'error'
    assert device._HEALTH_PRIORITY['degraded'] == 'warn'


def test_an_arq_object_is_read_as_a_dict_is(notes, ctx):
    from cyborg.objects import arq as arq_obj
    values = _arq()
    obj = arq_obj.AcceleratorRequest(ctx, id=1, **values)
    arq.bind_ended(None, [obj], ok=True)
    arq.bind_ended(None, [values], ok=True)
    first, second = notes()
    assert first['payload'] == second['payload']


def test_inventory_changes_follow_their_switch(notes, override):
    override('notify_on_inventory_change', False, group='notifications')
    device.inventory_changed(None, created=[_device()],
                             deleted=[_device()])
    assert notes() == []
    override('notify_on_inventory_change', True, group='notifications')
    device.inventory_changed(None, created=[_device()],
                             updated=[_device()], deleted=[_device()])
    assert notes.types() == ['accelerator.device.create',
                             'accelerator.device.update',
                             'accelerator.device.delete']
