"""Tests of driver loading and discovery in the agent."""

import pytest

from cyborg import exception
from cyborg.agent import resource_tracker


def test_installed_drivers_include_fake():
    assert 'fake_driver' in resource_tracker.available_drivers()


def test_unknown_driver_names_the_option():
    with pytest.raises(exception.DriverNotFound) as info:
        resource_tracker.ResourceTracker('h', ['fake_driver', 'nope_driver'])
    message = str(info.value)
    assert message.startswith('[agent] enabled_drivers')
    assert "'nope_driver'" in message and 'fake_driver' in message


def test_discover_collects_every_driver():
    tracker = resource_tracker.ResourceTracker('h', ['fake_driver'])
    host_report, failed = tracker.discover()
    assert failed == []
    assert host_report.host == 'h' and len(host_report.devices) == 1


def test_a_failing_driver_is_reported_not_raised():
    tracker = resource_tracker.ResourceTracker('h', ['fake_driver'])

    class Broken:
        name = 'broken'

        def discover(self, ctx):
            raise OSError('sysfs went away')

    tracker.drivers['broken_driver'] = Broken()
    host_report, failed = tracker.discover()
    assert failed == ['broken']
    assert len(host_report.devices) == 1
