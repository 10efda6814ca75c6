"""Scrub between tenants end to end, over RabbitMQ: the last unbind of a
deployable has it cleaning (reserved, announced) until its agent's driver
scrubbed it; a scrub that fails leaves the device failed."""

import pytest
import requests

from cyborg import embedded_placement
from cyborg.tests import deployments
from cyborg.tests import placement as placement_helpers
from cyborg.tests import processes
from cyborg.tests.functional import test_notifications as notifications
from cyborg.tests.unit.notifications import samples

pytestmark = pytest.mark.functional

TIMEOUT = 60
HANDLES = 2
OPERATOR = notifications.OPERATOR
V25 = notifications.V25
V26 = dict(OPERATOR, **{'OpenStack-API-Version': 'accelerator 2.6'})


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('scrub')
    sections = {'oslo_messaging_notifications': {'driver': 'messagingv2'},
                'fake_driver': {'scrub_on_release': True}}
    with deployments.services(tmp, handles=HANDLES, devices=1,
                              sections=sections) as deployment:
        consumer = notifications.Consumer(notifications._option(
            deployment.conductor.command[-1], 'DEFAULT', 'transport_url'))
        deployment.placement = embedded_placement.client_for(
            deployment.placement_url)
        (device,) = notifications._devices(deployment)
        notifications._call('POST', '%s/v2/devices/%s/activate' % (
            deployment.url, device['uuid']), 200, headers=notifications.V24)
        try:
            yield deployment, consumer
        finally:
            consumer.stop()
    for found in consumer.received:
        assert samples.mismatches(found) == [], found


def _deployable(deployment):
    (found,) = notifications._call('GET', deployment.url + '/v2/deployables',
                                   200, headers=V26)['deployables']
    return found


def _reserved(deployment, rp_uuid):
    root = deployment.placement.provider_by_name(deployment.host)['uuid']
    (provider,) = [p for p in placement_helpers.children(
        deployment.placement, root).values() if p['uuid'] == rp_uuid]
    inventory = provider['inventories']['FPGA']
    return inventory['reserved'] == inventory['total']


def _update_driver(deployment):
    """PATCH the fake driver (its agent re-reads its options); again
    while the scrub the last delete started holds the device (409)."""
    def updated():
        resp = requests.patch('%s/v2/drivers/%s/fake_driver' % (
            deployment.url, deployment.host), headers=V25, json={},
            timeout=TIMEOUT)
        if resp.status_code == 409 and 'running scrub' in resp.text:
            return None
        assert resp.status_code == 200, resp.text
        return resp

    processes.wait_for(updated, TIMEOUT, interval=0.5,
                       what='the driver update')


def _boot_and_delete(deployment):
    instance, arqs = notifications._boot(deployment, 1)
    assert {a['state'] for a in arqs} == {'Bound'}
    notifications._call('DELETE', '%s%s?instance=%s' % (
        deployment.url, notifications.ARQS, instance), 204,
        headers=notifications.NOVA)
    return arqs


def test_the_last_unbind_scrubs_the_deployable(cloud):
    deployment, consumer = cloud
    deployable = _deployable(deployment)
    assert deployable['cleaning'] is False
    _boot_and_delete(deployment)
    (started,) = consumer.wait('accelerator.deployable.scrub.start',
                               deployable_uuid=deployable['uuid'])
    (ended,) = consumer.wait('accelerator.deployable.scrub.end',
                             deployable_uuid=deployable['uuid'])
    for found in (started, ended):
        assert samples.mismatches(found) == [], found
    assert _deployable(deployment)['cleaning'] is False
    processes.wait_for(
        lambda: not _reserved(deployment, deployable['rp_uuid']), TIMEOUT,
        what='the scrubbed deployable to be offered again')
    assert deployment.only_device('2.6')['status'] == 'ready'


def test_a_failed_scrub_fails_the_device(cloud):
    deployment, consumer = cloud
    agent_conf = deployment.process('cyborg-agent').command[-1]
    notifications._set_option(agent_conf, 'fake_driver', 'scrub_failure',
                              'the reset did not clear the memory')
    # NOTE(tests): a driver update re-reads the agent's configuration.
    notifications._call('PATCH', '%s/v2/drivers/%s/fake_driver' % (
        deployment.url, deployment.host), 200, headers=V25, json={})
    deployable = _deployable(deployment)
    _boot_and_delete(deployment)
    (error,) = consumer.wait('accelerator.deployable.scrub.error',
                             deployable_uuid=deployable['uuid'])
    assert samples.mismatches(error) == [], error
    assert error['priority'] == 'ERROR'
    assert 'did not clear' in notifications._data(error)['reason']
    device = processes.wait_for(
        lambda: (lambda d: d if d['status'] == 'error' else None)(
            deployment.only_device('2.6')), TIMEOUT, what='the failed device')
    assert device['health'] == 'failed'
    assert device['status_reason'].startswith('scrub failed: ')
    assert _reserved(deployment, deployable['rp_uuid'])
    # No tenant gets it: a bind that still reaches it fails.
    instance, arqs = notifications._boot(deployment, 1)
    assert {a['state'] for a in arqs} == {'BindFailed'}
    notifications._call('DELETE', '%s%s?instance=%s' % (
        deployment.url, notifications.ARQS, instance), 204,
        headers=notifications.NOVA)
    # An operator who fixed it returns it.
    notifications._set_option(agent_conf, 'fake_driver', 'scrub_failure',
                              '')
    _update_driver(deployment)
    resp = requests.post('%s/v2/devices/%s/enable' % (
        deployment.url, device['uuid']), headers=OPERATOR, timeout=TIMEOUT)
    assert resp.status_code == 204, resp.text
    assert deployment.only_device('2.6')['status'] == 'ready'
    processes.wait_for(
        lambda: not _reserved(deployment, deployable['rp_uuid']), TIMEOUT,
        what='the device to be offered again')
