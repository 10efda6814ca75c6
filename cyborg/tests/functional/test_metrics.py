"""Device telemetry end to end: the agent's Prometheus endpoint and
GET /v2/devices/{uuid}/metrics, over RabbitMQ.

The agent runs the generic PCI driver on a copy of the simulated
``pci-host`` whose Habana Gaudi card (0000:d8:00.0) is given AER counters
and an hwmon device, written here the way the kernel shows them; what the
endpoint and the API report must be what those files hold. The
exposition is read with prometheus_client's own parser.
"""

import os

from prometheus_client import parser
import pytest
import requests

from cyborg.tests import deployments
from cyborg.tests import processes
from cyborg.tests.fixtures import pci_hosts

pytestmark = pytest.mark.functional

ADDRESS = '0000:d8:00.0'
# NOTE(tests): the layout of the kernel's aer_dev_* files: one line per
# error kind, then the total.
AER = {
    'aer_dev_correctable': 'RxErr 2\nBadTLP 3\nBadDLLP 0\nRollover 0\n'
                           'Timeout 0\nNonFatalErr 0\nCorrIntErr 0\n'
                           'HeaderOF 0\nTOTAL_ERR_COR 5\n',
    'aer_dev_nonfatal': 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\n'
                        'CmpltTO 0\nTOTAL_ERR_NONFATAL 0\n',
    'aer_dev_fatal': 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\n'
                     'CmpltTO 0\nTOTAL_ERR_FATAL 0\n',
}
HWMON = {'name': 'habanalabs\n', 'temp1_input': '48000\n',
         'temp1_crit': '95000\n', 'temp2_input': '51500\n',
         'power1_average': '87250000\n'}
EXPECTED = {'aer_correctable_total': 5.0, 'aer_nonfatal_total': 0.0,
            'aer_fatal_total': 0.0, 'temperature_celsius': 51.5,
            'power_watts': 87.25}
V26 = {'OpenStack-API-Version': 'accelerator 2.6'}
TIMEOUT = 60


def _host(tmp_path):
    root = pci_hosts.copy_host('pci-host', tmp_path / 'sysfs')
    fn_dir = os.path.join(root, 'bus', 'pci', 'devices', ADDRESS)
    for name, text in AER.items():
        with open(os.path.join(fn_dir, name), 'w') as out:
            out.write(text)
    hwmon = os.path.join(fn_dir, 'hwmon', 'hwmon4')
    os.makedirs(hwmon, exist_ok=True)
    for name, text in HWMON.items():
        with open(os.path.join(hwmon, name), 'w') as out:
            out.write(text)
    return root


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('metrics')
    port = processes.free_port()
    sections = {
        'agent': {'enabled_drivers': 'pci_driver',
                  'sysfs_root': _host(tmp),
                  'metrics_listen': '127.0.0.1:%d' % port,
                  'report_interval': 1},
        'pci': {'device_spec': '{"address": "%s"}' % ADDRESS},
    }
    with deployments.services(tmp, sections=sections) as found:
        found.metrics_url = 'http://127.0.0.1:%d/metrics' % port
        yield found


def _device(cloud):
    return cloud.only_device('2.6')


def _scrape(cloud):
    resp = requests.get(cloud.metrics_url, timeout=TIMEOUT)
    assert resp.status_code == 200, resp.text
    assert resp.headers['Content-Type'].startswith('text/plain')
    return {family.name: family
            for family in parser.text_string_to_metric_families(resp.text)}


def test_endpoint_parses_with_prometheus_client(cloud):
    device = _device(cloud)

    def labelled():
        families = _scrape(cloud)
        health = families['cyborg_device_health'].samples
        return families if health and health[0].labels['uuid'] else None

    # NOTE(tests): the uuid label appears once the conductor answered the
    # agent's first report.
    families = processes.wait_for(labelled, TIMEOUT, interval=0.2,
                                  what='the device uuid in the labels')
    labels = {'uuid': device['uuid'], 'address': ADDRESS,
              'host': cloud.host, 'vendor': '0x1da3',
              'model': device['model'], 'driver': 'pci'}
    for name, value in EXPECTED.items():
        family = families['cyborg_device_' + name.removesuffix('_total')]
        assert family.type == ('counter' if name.endswith('_total')
                               else 'gauge')
        (sample,) = family.samples
        assert sample.name == 'cyborg_device_' + name
        assert sample.labels == labels
        assert sample.value == value
    states = {s.labels['state']: s.value
              for s in families['cyborg_device_health'].samples}
    assert sorted(states) == ['degraded', 'failed', 'ok', 'unknown']
    assert sorted(states.values()) == [0.0, 0.0, 0.0, 1.0]
    (bound,) = families['cyborg_device_bound_arqs'].samples
    assert bound.labels == labels and bound.value == 0.0


def test_api_relays_the_agents_sample(cloud):
    device = _device(cloud)
    url = '%s/v2/devices/%s/metrics' % (cloud.url, device['uuid'])
    resp = requests.get(url, headers=V26, timeout=TIMEOUT)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body['uuid'] == device['uuid']
    assert body['hostname'] == cloud.host
    assert body['sampled_at'].endswith('+00:00')
    assert body['metrics'] == EXPECTED
    states = {s.labels['state']: s.value for s in
              _scrape(cloud)['cyborg_device_health'].samples}
    assert states[body['health']] == 1.0

    old = requests.get(url, headers={
        'OpenStack-API-Version': 'accelerator 2.5'}, timeout=TIMEOUT)
    assert old.status_code == 404
    assert '2.6' in old.text

    missing = requests.get(
        '%s/v2/devices/%s/metrics' % (
            cloud.url, '0d1c3a5e-0000-4000-8000-000000000000'),
        headers=V26, timeout=TIMEOUT)
    assert missing.status_code == 404
