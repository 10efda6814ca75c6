"""Tests of driver loading and discovery in the agent."""

import pytest

from cyborg import exception
from cyborg.agent import cache
from cyborg.agent import resource_tracker
from cyborg.drivers import base
from cyborg.drivers import report


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


# --- Health in the report. ----------------------------------------------

def _fake_with(health_of):
    tracker = resource_tracker.ResourceTracker('h', ['fake_driver'])
    tracker.drivers['fake_driver'].health = health_of
    return tracker


def _only(tracker):
    host_report, failed = tracker.discover()
    assert failed == []
    (device,) = host_report.devices
    return device


def test_health_fills_the_report_and_fault_only_when_failed():
    states = iter([
        base.Health(base.OK, None, ()),
        base.Health(base.DEGRADED, 'PCIe link x8 of x16', ('pci', 'link')),
        base.Health(base.FAILED, 'AER fatal errors: 1', ('pci', 'aer')),
        base.Health(base.FAILED, None, ('pci',)),
        base.Health(base.UNKNOWN, 'no health check could read its files',
                    ())])
    tracker = _fake_with(lambda device: next(states))
    seen = []
    for _ in range(5):
        device = _only(tracker)
        seen.append((device.health, device.health_reason,
                     device.health_sources, device.fault))
    assert seen == [
        ('ok', None, [], None),
        ('degraded', 'PCIe link x8 of x16', ['pci', 'link'], None),
        ('failed', 'AER fatal errors: 1', ['pci', 'aer'],
         'AER fatal errors: 1'),
        ('failed', 'unhealthy', ['pci'], 'unhealthy'),
        ('unknown', 'no health check could read its files', [], None)]


def test_a_raising_health_check_is_unknown_never_a_failure():
    # NOTE(tests): an exception out of a check is a fault of the check,
    # not a verdict on the device: it must not fail (and drain) it.
    def broken(device):
        raise TypeError('bytes or integer address expected')

    tracker = _fake_with(broken)
    device = _only(tracker)
    assert (device.health, device.fault) == (base.UNKNOWN, None)
    assert device.health_reason == (
        'health check errored: TypeError: bytes or integer address '
        'expected')


def test_an_unchanged_health_sends_no_delta_and_a_change_does(tmp_path):
    current = {'health': base.Health(base.OK, None, ('pci',))}
    tracker = _fake_with(lambda device: current['health'])
    reports = cache.ReportCache(str(tmp_path / 'reports.json'))

    def delta():
        host_report, _failed = tracker.discover()
        primitive = host_report.to_primitive()['devices']
        changed, removed, now = reports.diff(primitive)
        reports.applied(1, now)
        return changed, removed

    changed, _removed = delta()
    assert [dev['health'] for dev in changed] == ['ok']
    assert delta() == ([], [])
    current['health'] = base.Health(base.FAILED, 'QAT state down',
                                    ('pci', 'qat'))
    changed, _removed = delta()
    assert [(dev['health'], dev['fault'], dev['health_sources'])
            for dev in changed] == [('failed', 'QAT state down',
                                     ['pci', 'qat'])]
    assert delta() == ([], [])


def test_old_agents_reports_read_as_healthy_or_failed():
    tracker = resource_tracker.ResourceTracker('h', ['fake_driver'])
    primitive = tracker.discover()[0].to_primitive()
    for device in primitive['devices']:
        for name in ('health', 'health_reason', 'health_sources'):
            del device[name]
    healthy = report.HostReport.from_primitive(primitive).devices[0]
    assert (healthy.health, healthy.health_reason,
            healthy.health_sources) == ('ok', None, [])
    primitive['devices'][0]['fault'] = 'thermal trip'
    failed = report.HostReport.from_primitive(primitive).devices[0]
    assert (failed.health, failed.health_reason) == ('failed',
                                                     'thermal trip')
