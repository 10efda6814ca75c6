"""The agent's telemetry: Prometheus exposition and the device_metrics RPC.

The exposition is read back with prometheus_client's own parser, as a
Prometheus server reads it; the RPC runs against a real conductor and agent
on the fake transport.
"""

import datetime
import json
import os
import re
import socket
import types
import urllib.request

from prometheus_client import exposition
from prometheus_client import parser
from prometheus_client import registry
import pytest

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.agent import metrics
from cyborg.conductor import agent_rpcapi
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.drivers import telemetry

FULL = {'utilization_ratio': 0.25, 'memory_used_bytes': 2 ** 30,
        'memory_total_bytes': 16 * 2 ** 30, 'temperature_celsius': 61.5,
        'power_watts': 182.25, 'ecc_corrected_total': 7,
        'ecc_uncorrected_total': 0, 'xid_errors_total': 2,
        'aer_correctable_total': 3,
        'aer_nonfatal_total': 1, 'aer_fatal_total': 0}


def _device(bus, health='ok', vendor='0x10de', model='A100'):
    return report.Device(
        type='GPU', vendor=vendor, model=model,
        controlpath=report.ControlPath('PCI', {
            'domain': '0000', 'bus': bus, 'device': '00', 'function': '0'}),
        driver_name='sampled', health=health,
        health_reason=None if health == 'ok' else 'link at x8 of x16',
        health_sources=['pci', 'aer', 'link'],
        deployables=[report.Deployable(name='h1_%s' % bus,
                                       num_accelerators=1,
                                       resource_class='PGPU')])


class _Driver:
    """A driver whose metrics() returns what the test sets, and counts."""

    name = 'sampled'

    def __init__(self, values):
        self.values = values
        self.calls = 0

    def metrics(self, device):
        self.calls += 1
        if isinstance(self.values, Exception):
            raise self.values
        return dict(self.values)


class _Tracker:
    def __init__(self, driver):
        self.driver = driver

    def driver_named(self, name):
        assert name == self.driver.name
        return self.driver


def _manager(devices, driver, result=None):
    """What the sampler reads of an AgentManager."""
    return types.SimpleNamespace(
        host='h1', tracker=_Tracker(driver), placement=None, conductor=None,
        last_result=result, _found={d.key.text(): d for d in devices})


def _scrape(sampler):
    found = registry.CollectorRegistry()
    found.register(metrics.DeviceCollector(sampler))
    text = exposition.generate_latest(found).decode()
    return {family.name: family
            for family in parser.text_string_to_metric_families(text)}


def test_every_series_parses_with_its_type_labels_and_value():
    known, unknown = _device('3b'), _device('af', health='degraded')
    result = {'devices': [{'uuid': 'c0ffee00-0000-4000-8000-000000000001',
                           'controlpath': known.key.wire()}]}
    families = _scrape(metrics.Sampler(
        _manager([known, unknown], _Driver(FULL), result)))

    for name, (doc, kind) in telemetry.SERIES.items():
        # prometheus_client's parser names a counter's family without
        # _total and keeps _total on its samples
        family = families[metrics.family(name).removesuffix('_total')
                          if kind == 'counter' else metrics.family(name)]
        assert family.type == kind and family.documentation == doc
        values = {s.labels['address']: (s.name, s.value)
                  for s in family.samples}
        assert values == {
            '0000:3b:00.0': (metrics.family(name), float(FULL[name])),
            '0000:af:00.0': (metrics.family(name), float(FULL[name]))}
    sample = families[metrics.family('power_watts')].samples[0]
    assert sample.labels == {
        'uuid': 'c0ffee00-0000-4000-8000-000000000001',
        'address': '0000:3b:00.0', 'host': 'h1', 'vendor': '0x10de',
        'model': 'A100', 'driver': 'sampled'}

    health = families[metrics.HEALTH]
    assert health.type == 'gauge'
    states = {(s.labels['address'], s.labels['state']): s.value
              for s in health.samples}
    assert states == {
        ('0000:3b:00.0', 'ok'): 1.0, ('0000:3b:00.0', 'degraded'): 0.0,
        ('0000:3b:00.0', 'failed'): 0.0, ('0000:3b:00.0', 'unknown'): 0.0,
        ('0000:af:00.0', 'ok'): 0.0, ('0000:af:00.0', 'degraded'): 1.0,
        ('0000:af:00.0', 'failed'): 0.0, ('0000:af:00.0', 'unknown'): 0.0}
    # a device the conductor has not named yet has an empty uuid
    assert {s.labels['uuid'] for s in health.samples
            if s.labels['address'] == '0000:af:00.0'} == {''}
    # without Placement the agent knows no allocations: no sample
    assert families[metrics.BOUND_ARQS].samples == []
    emitted = {s.name for f in families.values() for s in f.samples}
    assert emitted | {metrics.BOUND_ARQS} == metrics.sample_names()


def test_values_that_are_no_series_are_left_out():
    driver = _Driver({'utilization_ratio': float('nan'), 'power_watts': True,
                      'temperature_celsius': 'hot', 'made_up': 3.0,
                      'memory_used_bytes': 5})
    families = _scrape(metrics.Sampler(_manager([_device('3b')], driver)))
    shown = {s.name: s.value for f in families.values() for s in f.samples
             if s.name != metrics.HEALTH}
    assert shown == {metrics.family('memory_used_bytes'): 5.0}


def test_a_failing_driver_costs_its_series_not_the_scrape():
    device = _device('3b', health='failed')
    families = _scrape(metrics.Sampler(
        _manager([device], _Driver(OSError('EIO')))))
    assert [s.labels['state'] for s in families[metrics.HEALTH].samples
            if s.value == 1.0] == ['failed']
    assert all(not families[metrics.family(name).removesuffix('_total')]
               .samples for name in telemetry.SERIES)


def test_placement_down_costs_only_the_bound_arqs():
    class Client:
        def get_usages(self, uuid):
            raise exception.PlacementUnavailable(reason='HTTP 503')

    driver = _Driver(FULL)
    manager = _manager([_device('3b')], driver)
    manager.placement = types.SimpleNamespace(client=Client())
    sampler = metrics.Sampler(manager)
    families = _scrape(sampler)
    assert families[metrics.BOUND_ARQS].samples == []
    assert families[metrics.family('power_watts')].samples[0].value == \
        182.25
    # the outage does not make every scrape read the hardware again
    _scrape(sampler)
    assert driver.calls == 1


def test_unknown_health_state_reads_as_unknown():
    device = _device('3b')
    device.health = 'on fire'
    families = _scrape(metrics.Sampler(_manager([device], _Driver({}))))
    assert [s.labels['state'] for s in families[metrics.HEALTH].samples
            if s.value == 1.0] == ['unknown']


def test_samples_are_served_again_for_max_age(override):
    override('metrics_max_age', 5.0, group='agent')
    now = [100.0]
    driver = _Driver(FULL)
    device = _device('3b')
    manager = _manager([device], driver)
    sampler = metrics.Sampler(manager, clock=lambda: now[0])
    for _ in range(20):
        sampler.samples()
        sampler.sample(device.key.wire())
    assert driver.calls == 1
    now[0] += 5.0
    sampler.samples()
    assert driver.calls == 2
    # a new discovery pass hands out new device objects: sampled again
    fresh = _device('3b')
    manager._found = {fresh.key.text(): fresh}
    sampler.samples()
    assert driver.calls == 3
    override('metrics_max_age', 0, group='agent')
    sampler.samples()
    assert driver.calls == 4


def test_one_device_sample_is_what_the_rpc_answers():
    device = _device('3b', health='degraded')
    sampler = metrics.Sampler(_manager([device], _Driver(FULL)))
    before = datetime.datetime.now(datetime.timezone.utc)
    answer = sampler.sample(['PCI', device.controlpath.cpid_info]) \
        .to_primitive()
    assert answer['metrics'] == {k: float(v) for k, v in FULL.items()}
    assert answer['health'] == 'degraded'
    assert answer['health_reason'] == 'link at x8 of x16'
    assert answer['health_sources'] == ['pci', 'aer', 'link']
    taken = datetime.datetime.fromisoformat(answer['sampled_at'])
    assert before <= taken <= datetime.datetime.now(datetime.timezone.utc)
    with pytest.raises(exception.DeviceMetricsUnavailable,
                       match='did not find it'):
        sampler.sample(_device('af').key.wire())


@pytest.mark.parametrize('value, expected', [
    ('127.0.0.1:9470', ('127.0.0.1', 9470)),
    ('0.0.0.0:0', ('0.0.0.0', 0)),
    ('[::1]:9470', ('::1', 9470)),
    ('localhost:80', ('localhost', 80)),
])
def test_listen_address(value, expected):
    assert metrics.parse_listen(value) == expected


@pytest.mark.parametrize('value', ['9470', ':9470', 'host:', 'host:port',
                                   'host:70000', '[::1]'])
def test_bad_listen_address_is_a_config_error(value):
    with pytest.raises(exception.ConfigError, match='metrics_listen'):
        metrics.parse_listen(value)


def test_endpoint_is_off_by_default():
    assert metrics.services(types.SimpleNamespace(telemetry=None)) == []


def test_http_endpoint_serves_the_text_format_and_stops():
    device = _device('3b')
    sampler = metrics.Sampler(_manager([device], _Driver(FULL)))
    svc = metrics.MetricsService(sampler, '127.0.0.1:0')
    svc.start()
    try:
        url = 'http://127.0.0.1:%d/metrics' % svc.port
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.headers['Content-Type'].startswith('text/plain')
            text = response.read().decode()
    finally:
        svc.stop()
        svc.wait()
    families = {f.name: f for f in parser.text_string_to_metric_families(
        text)}
    assert families[metrics.family('temperature_celsius')].samples[0] \
        .value == 61.5
    assert not svc._thread.is_alive()


def test_a_port_in_use_is_a_config_error():
    taken = socket.socket()
    taken.bind(('127.0.0.1', 0))
    taken.listen(1)
    try:
        svc = metrics.MetricsService(
            metrics.Sampler(_manager([], _Driver({}))),
            '127.0.0.1:%d' % taken.getsockname()[1])
        with pytest.raises(exception.ConfigError, match='cannot listen'):
            svc.start()
    finally:
        taken.close()


# --- The Grafana dashboard (tools/grafana) ----------------------------------

DASHBOARD = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                         os.pardir, os.pardir, 'tools', 'grafana',
                         'cyborg-devices.json')
_SERIES_NAME = re.compile(r'\b(cyborg_[a-z0-9_]+)')
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"')
_GROUPING = re.compile(r'\b(?:by|on|without|ignoring)\s*\(([^)]*)\)')
_LEGEND = re.compile(r'\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}')


def _dashboard_queries():
    """(where, PromQL, legend) of every panel target and template query."""
    with open(DASHBOARD) as stream:
        board = json.load(stream)
    found = []
    for panel in board['panels']:
        for target in panel.get('targets', ()):
            found.append((panel['title'], target['expr'],
                          target.get('legendFormat', '')))
    for variable in board['templating']['list']:
        if variable['type'] == 'query':
            found.append(('$' + variable['name'],
                          variable['query']['query'], ''))
    return board, found


def test_dashboard_queries_name_only_what_the_exporter_emits():
    """Every series and label the dashboard reads is served, and every
    series served is on a panel: the dashboard cannot rot unseen."""
    board, queries = _dashboard_queries()
    # the names a real scrape carries, read back by prometheus_client
    families = _scrape(metrics.Sampler(
        _manager([_device('3b')], _Driver(FULL))))
    emitted = {s.name for f in families.values() for s in f.samples}
    emitted.add(metrics.BOUND_ARQS)     # sampled only with Placement
    labels = set(metrics.LABELS) | {'state'}
    shown = set()
    for where, expr, legend in queries:
        named = set(_SERIES_NAME.findall(expr))
        assert named, '%s: %s names no series' % (where, expr)
        assert named <= emitted, '%s: %s' % (where, named - emitted)
        shown |= named
        used = set(_MATCHER.findall(expr)) | set(_LEGEND.findall(legend))
        for group in _GROUPING.findall(expr):
            used |= {name.strip() for name in group.split(',')}
        assert used <= labels, '%s: %s' % (where, used - labels)
    assert shown == emitted
    ids = [panel['id'] for panel in board['panels']]
    assert len(ids) == len(set(ids))
    assert {v['name'] for v in board['templating']['list']} >= {
        'host', 'vendor', 'model'}


# --- Against a real conductor and agent (fake transport) -------------------

SAMPLE = {'utilization_ratio': 0.5, 'temperature_celsius': 40.0,
          'aer_correctable_total': 2}


@pytest.fixture
def sampled(monkeypatch):
    """The fake driver samples SAMPLE (whatever its own metrics are)."""
    monkeypatch.setattr(fake.FakeDriver, 'metrics',
                        lambda self, device: dict(SAMPLE))


def _key():
    return ['PCI', '{"bus": "0c", "device": "00", "domain": "0000", '
                   '"function": "0"}']


def test_agent_rpc_answers_the_sample(stack, sampled):
    agent = stack()
    agent.report()
    answer = agent_rpcapi.AgentAPI().device_metrics(
        cyborg_context.get_admin_context(), 'node1', _key(), timeout=10)
    assert answer['metrics'] == {k: float(v) for k, v in SAMPLE.items()}
    assert answer['health'] == 'ok'
    datetime.datetime.fromisoformat(answer['sampled_at'])


def test_agent_rpc_for_a_device_not_found(stack, sampled):
    agent = stack()
    agent.report()
    other = ['PCI', '{"bus": "99", "device": "00", "domain": "0000", '
                    '"function": "0"}']
    with pytest.raises(exception.DeviceMetricsUnavailable,
                       match='node1 did not find it'):
        agent_rpcapi.AgentAPI().device_metrics(
            cyborg_context.get_admin_context(), 'node1', other, timeout=10)


def test_agent_rpc_pinned_below_1_7_is_refused(stack, override):
    override('agent', '1.6', group='upgrade_levels')
    with pytest.raises(exception.RPCVersionCapped, match='1.7'):
        agent_rpcapi.AgentAPI().device_metrics(
            cyborg_context.get_admin_context(), 'node1', _key(), timeout=1)


def test_scrape_has_the_conductors_uuid_and_placements_allocations(
        stack, placement, sampled, override, db):
    from cyborg.db import api as dbapi
    override('auto_activate_new_devices', True, group='conductor')
    agent = stack(placement=placement)
    agent.report()
    agent.report()
    (device,) = dbapi.devices.list(cyborg_context.get_admin_context())
    assert device.status == 'ready'
    provider = report.provider_uuid('node1_FakeDevice')
    placement.allocate(provider, 'FPGA', 2)
    placement.allocate(provider, 'FPGA', 1)
    families = _scrape(agent.telemetry)
    (bound,) = families[metrics.BOUND_ARQS].samples
    assert bound.value == 3.0
    assert bound.labels['uuid'] == device.uuid
    assert bound.labels['host'] == 'node1'
    assert families[metrics.family('utilization_ratio')].samples[0] \
        .value == 0.5


def test_uuids_are_asked_of_the_conductor_when_unknown(stack, sampled):
    agent = stack()
    agent.report()
    agent.telemetry.refresh_uuids()
    known = dict(agent.telemetry.uuids)
    assert len(known) == 1
    agent.telemetry.uuids.clear()
    agent.last_result = None
    agent.telemetry.refresh_uuids()
    assert agent.telemetry.uuids == known
