"""Tests of applying agent reports to the database."""

import json

import pytest
import sqlalchemy as sa

from cyborg import states
from cyborg.conductor import inventory
from cyborg.db import models
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report


def _report(host='node1', count=1, per_device=4, override=None):
    if override is not None:
        override('device_count', count, group='fake_driver')
        override('accelerators_per_device', per_device, group='fake_driver')
    return report.HostReport(host=host,
                             devices=fake.FakeDriver().discover(
                                 base.DiscoveryContext(host)))


def _rows(engine, model):
    with engine.connect() as conn:
        return conn.execute(sa.select(model.__table__)).all()


def test_new_host_creates_every_row(db, ctx, override):
    result = inventory.apply_report(ctx, _report(count=2, per_device=4,
                                                 override=override))
    assert result['changed'] is True
    assert len(result['devices']) == 2
    assert {d['status'] for d in result['devices']} == {
        states.DEVICE_INACTIVE}
    assert len(_rows(db, models.Device)) == 2
    assert len(_rows(db, models.ControlpathID)) == 2
    deps = _rows(db, models.Deployable)
    assert sorted(d.name for d in deps) == ['node1_FakeDevice',
                                            'node1_FakeDevice1']
    attrs = {(a.key, a.value) for a in _rows(db, models.Attribute)}
    assert attrs == {('rc', 'FPGA'), ('trait0', 'CUSTOM_FAKE_DEVICE')}
    handles = _rows(db, models.AttachHandle)
    assert len(handles) == 8
    assert all(h.attach_type == 'TEST_PCI' for h in handles)
    assert json.loads(handles[0].attach_info)['domain'] == '0000'


def test_unchanged_report_changes_nothing(db, ctx, override):
    first = inventory.apply_report(ctx, _report(override=override))
    before = _rows(db, models.Device)
    again = inventory.apply_report(ctx, _report(override=override))
    assert again['changed'] is False
    assert again['devices'] == first['devices']
    assert _rows(db, models.Device) == before


def test_changed_handles_and_capacity_are_updated(db, ctx, override):
    inventory.apply_report(ctx, _report(per_device=4, override=override))
    result = inventory.apply_report(ctx, _report(per_device=2,
                                                 override=override))
    assert result['changed'] is True
    (dep,) = _rows(db, models.Deployable)
    assert dep.num_accelerators == 2
    assert len(_rows(db, models.AttachHandle)) == 2


def test_vanished_device_is_removed(db, ctx, override):
    inventory.apply_report(ctx, _report(count=2, override=override))
    result = inventory.apply_report(ctx, _report(count=1, override=override))
    assert result['changed'] is True
    assert len(result['devices']) == 1
    assert len(_rows(db, models.Device)) == 1
    assert len(_rows(db, models.Deployable)) == 1
    assert len(_rows(db, models.AttachHandle)) == 4


def test_vanished_device_in_use_is_lost_then_found(db, ctx, override):
    inventory.apply_report(ctx, _report(override=override))
    with db.begin() as conn:
        conn.execute(sa.update(models.AttachHandle.__table__)
                     .values(in_use=True))
    empty = report.HostReport(host='node1')
    result = inventory.apply_report(ctx, empty)
    assert [d['status'] for d in result['devices']] == [states.DEVICE_LOST]
    # A second report without it changes nothing more.
    assert inventory.apply_report(ctx, empty)['changed'] is False
    back = inventory.apply_report(ctx, _report(override=override))
    assert [d['status'] for d in back['devices']] == [
        states.DEVICE_INACTIVE]


def test_devices_of_a_failed_driver_are_kept(db, ctx, override):
    inventory.apply_report(ctx, _report(override=override))
    result = inventory.apply_report(ctx, report.HostReport(host='node1'),
                                    failed_drivers=['fake'])
    assert result['changed'] is False
    assert len(_rows(db, models.Device)) == 1


def test_hosts_are_independent(db, ctx, override):
    inventory.apply_report(ctx, _report(host='node1', override=override))
    inventory.apply_report(ctx, _report(host='node2', override=override))
    inventory.apply_report(ctx, report.HostReport(host='node2'))
    devices = _rows(db, models.Device)
    assert [d.hostname for d in devices] == ['node1']


def test_operator_status_survives_reports(db, ctx, override):
    inventory.apply_report(ctx, _report(override=override))
    with db.begin() as conn:
        conn.execute(sa.update(models.Device.__table__)
                     .values(status=states.DEVICE_READY))
    result = inventory.apply_report(ctx, _report(override=override))
    assert result['devices'][0]['status'] == states.DEVICE_READY


@pytest.mark.parametrize('trait_change', [['CUSTOM_A'], ['CUSTOM_A', 'B']])
def test_attributes_follow_traits(db, ctx, trait_change):
    dev = report.Device(
        type='GPU', vendor='0x10de', model='m',
        controlpath=report.ControlPath('PCI', {'domain': '0000',
                                               'bus': '01', 'device': '00',
                                               'function': '0'}),
        deployables=[report.Deployable(
            name='n_0000_01_00_0', num_accelerators=1,
            resource_class='PGPU', traits=['CUSTOM_X'],
            attach_handles=[report.AttachHandle('PCI', {'bus': '01'})])])
    inventory.apply_report(ctx, report.HostReport('n', [dev]))
    dev.deployables[0].traits = trait_change
    inventory.apply_report(ctx, report.HostReport('n', [dev]))
    values = sorted(a.value for a in _rows(db, models.Attribute)
                    if a.key.startswith('trait'))
    assert values == sorted(trait_change)


def test_warnings_are_the_status_reason_until_they_clear(db, ctx, override):
    damaged = _report(override=override)
    damaged.devices[0].warnings = [
        'bus/pci/devices/0000:0c:00.0/virtfn1: dangling link']
    inventory.apply_report(ctx, damaged)
    (device,) = _rows(db, models.Device)
    # a partly readable device is still usable: its status is unchanged
    assert device.status == states.DEVICE_INACTIVE
    assert device.status_reason == (
        'partly readable: bus/pci/devices/0000:0c:00.0/virtfn1: dangling '
        'link')
    assert inventory.apply_report(ctx, damaged)['changed'] is False
    inventory.apply_report(ctx, _report(override=override))
    (device,) = _rows(db, models.Device)
    assert device.status_reason is None


def test_warnings_never_hide_a_fault(db, ctx, override):
    faulty = _report(override=override)
    faulty.devices[0].fault = 'fell off the bus'
    faulty.devices[0].warnings = ['bus/pci/devices/x/numa_node: garbage']
    inventory.apply_report(ctx, faulty)
    (device,) = _rows(db, models.Device)
    assert device.status == states.DEVICE_ERROR
    assert device.status_reason == 'unhealthy: fell off the bus'


def test_the_offer_reason_is_recorded_until_the_device_offers(db, ctx,
                                                              override):
    offering = _report(override=override)
    empty = _report(override=override)
    empty.devices[0].deployables = []
    empty.devices[0].offer_reason = 'its VFs sit on host drivers'
    inventory.apply_report(ctx, empty)
    (device,) = _rows(db, models.Device)
    # The reason has a column of its own: the status and its reason are
    # the lifecycle's.
    assert (device.offer_reason, device.status_reason) == (
        'its VFs sit on host drivers', None)
    assert inventory.apply_report(ctx, empty)['changed'] is False
    empty.devices[0].offer_reason = 'its PF sits on a host driver'
    assert inventory.apply_report(ctx, empty)['changed'] is True
    assert _rows(db, models.Device)[0].offer_reason == (
        'its PF sits on a host driver')
    inventory.apply_report(ctx, offering)
    assert _rows(db, models.Device)[0].offer_reason is None


def test_a_report_of_an_agent_older_than_offer_reasons(db, ctx, override):
    primitive = _report(override=override).to_primitive()
    for device in primitive['devices']:
        del device['offer_reason']
        device['deployables'] = []
    inventory.apply_report(ctx, report.HostReport.from_primitive(primitive))
    (device,) = _rows(db, models.Device)
    assert device.offer_reason == report.UNEXPLAINED % 'fake'
