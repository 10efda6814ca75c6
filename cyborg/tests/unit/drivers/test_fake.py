"""Tests of the fake driver and the report wire format."""

import pytest

from cyborg import exception
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report


def test_default_matches_upstream_fake_device(override):
    ctx = base.DiscoveryContext('compute-1.example')
    (dev,) = fake.FakeDriver().discover(ctx)
    assert (dev.type, dev.vendor) == ('FPGA', '0xABCD')
    assert dev.controlpath.cpid_info == {'domain': '0000', 'bus': '0c',
                                         'device': '00', 'function': '0'}
    (dep,) = dev.deployables
    assert dep.name == 'compute-1_example_FakeDevice'
    assert dep.num_accelerators == 16 == len(dep.attach_handles)
    assert dep.attributes() == {'rc': 'FPGA', 'trait0': 'CUSTOM_FAKE_DEVICE'}
    assert len({h.key for h in dep.attach_handles}) == 16


def test_device_count_is_configurable(override):
    override('device_count', 3, group='fake_driver')
    override('accelerators_per_device', 2, group='fake_driver')
    devices = fake.FakeDriver().discover(base.DiscoveryContext('h'))
    assert len(devices) == 3
    assert len({d.controlpath.key for d in devices}) == 3
    assert len({d.deployables[0].name for d in devices}) == 3
    assert all(len(d.deployables[0].attach_handles) == 2 for d in devices)


def test_report_round_trip(override):
    override('device_count', 2, group='fake_driver')
    devices = fake.FakeDriver().discover(base.DiscoveryContext('h'))
    original = report.HostReport('h', devices)
    assert report.HostReport.from_primitive(
        original.to_primitive()) == original


def test_prepare_succeeds_unless_a_failure_is_set(override):
    driver = fake.FakeDriver()
    info = {'domain': '0000', 'bus': '0c', 'device': '00', 'function': '0'}
    assert driver.prepare_handle('MDEV', info, 'h-1') is None
    override('prepare_failure', 'no mdev type left', group='fake_driver')
    with pytest.raises(exception.DriverError) as raised:
        driver.prepare_handle('MDEV', info, 'h-1')
    assert 'no mdev type left' in str(raised.value)
