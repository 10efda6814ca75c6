"""Versioned notifications over RabbitMQ, as a consumer receives them.

Real cyborg-api, cyborg-conductor and cyborg-agent processes run with
``[oslo_messaging_notifications] driver = messagingv2`` on a RabbitMQ
vhost of their own; oslo.messaging's notification listener, in this
process, consumes ``versioned_notifications.info`` and ``.error`` there.
Every notification received is checked against its documented sample.
The agent's host is the simulated FPGA host, so that installing
intel_fpga_driver, programming its cards (a fake Glance, a stand-in
``fpgaconf``) and uninstalling it are announced too. The agent verifies
image signatures (``[glance] verify_image_signatures``, certificates from
the cyborg_local key manager), so every image here is signed.
"""

import os
import sys
import uuid

import pytest
import requests

from cyborg.tests import deployments
from cyborg.tests import fake_services
from cyborg.tests import notification_consumer
from cyborg.tests import processes
from cyborg.tests import signing
from cyborg.tests.fixtures import gpu_fpga_hosts
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.functional import test_cli
from cyborg.tests.unit.notifications import samples

pytestmark = pytest.mark.functional

Consumer = notification_consumer.Consumer
_data = notification_consumer.data
_option = notification_consumer.option
_set_option = notification_consumer.set_option

TIMEOUT = 60
OPERATOR = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
            'X-User-Id': 'operator'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'p-tenant',
          'X-User-Id': 'u-tenant'}
NOVA = dict(MEMBER, **{'X-Service-Roles': 'service'})
V24 = dict(OPERATOR, **{'OpenStack-API-Version': 'accelerator 2.4'})
V25 = dict(OPERATOR, **{'OpenStack-API-Version': 'accelerator 2.5'})
ARQS = '/v2/accelerator_requests'
HANDLES = 4
#: The simulated host whose Intel FPGAs (a PAC Arria 10 with 2 VFs, a PAC
#: D5005) the agent reports once intel_fpga_driver is installed; until
#: then only the fake driver's devices exist.
FPGA_HOST = 'fpga-host'
FPGA_DRIVER = 'intel_fpga_driver'
# NOTE(tests): fpgaconf runs through a privsep daemon started without
# sudo (the tests run as root).
PRIVSEP_HELPER = os.path.join(os.path.dirname(sys.executable),
                              'privsep-helper')


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    """One deployment for the module, and the consumer on its vhost.

    Its agent runs the fake driver on the simulated FPGA host, so that a
    test can install intel_fpga_driver and program its FPGAs, with a fake
    Glance's images and a stand-in ``fpgaconf`` (``deployment.fpgaconf``,
    which a test may rewrite to fail).
    """
    tmp = tmp_path_factory.mktemp('notifications')
    fpgaconf, record = gpu_fpga_hosts.fake_tool(tmp, 'fpgaconf')
    signer = signing.Signer(tmp / 'certificates')
    with fake_services.serve_glance() as glance:
        sections = {
            'oslo_messaging_notifications': {'driver': 'messagingv2'},
            'agent': {'sysfs_root': pci_hosts.committed(FPGA_HOST)},
            'fpga': {'fpgaconf_path': fpgaconf},
            'glance': {'auth_type': 'admin_token', 'endpoint': glance.url,
                       'token': 'glance-token',
                       'verify_image_signatures': True},
            'key_manager': {'backend': 'cyborg_local',
                            'certificate_dir': signer.directory},
            'cyborg_sys_admin': {'helper_command': PRIVSEP_HELPER},
        }
        with deployments.services(tmp, handles=HANDLES, devices=1,
                                  sections=sections) as deployment:
            deployment.glance = glance
            deployment.signer = signer
            deployment.fpgaconf = fpgaconf
            deployment.fpgaconf_record = record
            url = _option(deployment.conductor.command[-1], 'DEFAULT',
                          'transport_url')
            consumer = Consumer(url)
            try:
                yield deployment, consumer
            finally:
                consumer.stop()
    for notification in consumer.received:
        assert samples.mismatches(notification) == [], notification


def _checked(found):
    for notification in found:
        assert samples.mismatches(notification) == [], notification
    return found


def _call(method, url, status, headers=OPERATOR, **kwargs):
    resp = requests.request(method, url, headers=headers, timeout=TIMEOUT,
                            **kwargs)
    assert resp.status_code == status, resp.text
    return resp.json() if resp.content else None


def _signed_image(deployment, name, data=b'bitstream'):
    """A Glance image of ``data``, signed as Glance's users sign."""
    return deployment.glance.add(data=data, name=name,
                                 **deployment.signer.properties(data))


def _devices(deployment):
    return _call('GET', deployment.url + '/v2/devices', 200)['devices']


def test_discovered_device_is_announced(cloud):
    deployment, consumer = cloud
    (created,) = _checked(consumer.wait('accelerator.device.create',
                                        hostname=deployment.host))
    (device,) = _devices(deployment)
    assert _data(created)['uuid'] == device['uuid']
    assert created['publisher_id'] == 'cyborg-conductor:ctl-1'


def test_activation_is_announced_as_status_changes(cloud):
    deployment, consumer = cloud
    (device,) = _devices(deployment)
    _call('POST', '%s/v2/devices/%s/activate' % (deployment.url,
                                                   device['uuid']),
          200, headers=V24)
    changes = _checked(consumer.wait('accelerator.device.status_change',
                                     count=2, uuid=device['uuid']))
    assert [(_data(n)['old_status'], _data(n)['status'])
            for n in changes] == [('inactive', 'activating'),
                                  ('activating', 'ready')]


def _profile(deployment, amount):
    name = 'notify-%s' % uuid.uuid4().hex[:8]
    _call('POST', deployment.url + '/v2/device_profiles', 201,
          json=[{'name': name, 'groups': [{'resources:FPGA': str(amount)}]}])
    return name


def _boot(deployment, amount):
    """Create ``amount`` ARQs and bind them to a new instance on the fake
    device's provider, as Nova does; the instance and the resolved ARQs."""
    (deployable,) = _call('GET', deployment.url + '/v2/deployables',
                          200)['deployables']
    arqs = _call('POST', deployment.url + ARQS, 201, headers=MEMBER,
                 json={'device_profile_name': _profile(deployment,
                                                       amount)})['arqs']
    instance = str(uuid.uuid4())
    _call('PATCH', deployment.url + ARQS, 202, headers=NOVA, json={
        arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': deployment.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': deployable['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        for arq in arqs})

    def resolved():
        resp = requests.get(
            deployment.url + ARQS + '?instance=%s&bind_state=resolved'
            % instance, headers=MEMBER, timeout=TIMEOUT)
        return resp.json()['arqs'] if resp.status_code == 200 else None

    return instance, processes.wait_for(resolved, TIMEOUT, interval=0.1,
                                        what='the ARQs to be resolved')


def test_arq_create_bind_unbind_delete(cloud):
    deployment, consumer = cloud
    instance, arqs = _boot(deployment, 2)
    assert {a['state'] for a in arqs} == {'Bound'}
    first = arqs[0]['uuid']
    _call('PATCH', deployment.url + ARQS, 202, headers=NOVA, json={
        first: [{'op': 'remove', 'path': path} for path in
                ('/hostname', '/device_rp_uuid', '/instance_uuid')]})
    unbound, = _checked(consumer.wait('accelerator.arq.unbind', uuid=first))
    assert _data(unbound)['instance_uuid'] == instance
    assert _data(unbound)['state'] == 'Unbound'
    _call('DELETE', deployment.url + ARQS + '?instance=' + instance, 204,
          headers=NOVA)
    _call('DELETE', deployment.url + ARQS + '?arqs=' + first, 204,
          headers=NOVA)
    for arq in arqs:
        for event_type in ('create', 'bind.start', 'bind.end', 'delete'):
            _checked(consumer.wait('accelerator.arq.' + event_type,
                                   uuid=arq['uuid']))
    (bound,) = consumer.wait('accelerator.arq.bind.end', uuid=first)
    assert _data(bound)['instance_uuid'] == instance
    assert _data(bound)['attach_handle_uuid']


def test_a_failed_bind_arrives_on_the_error_queue(cloud):
    deployment, consumer = cloud
    instance, arqs = _boot(deployment, HANDLES + 1)
    failed = [a['uuid'] for a in arqs if a['state'] == 'BindFailed']
    assert len(failed) == 1
    (error,) = _checked(consumer.wait('accelerator.arq.bind.error',
                                      uuid=failed[0]))
    assert error['priority'] == 'ERROR'
    assert _data(error)['state'] == 'BindFailed'
    _call('DELETE', deployment.url + ARQS + '?instance=' + instance, 204,
          headers=NOVA)
    consumer.wait('accelerator.arq.delete', uuid=failed[0])


def test_driver_update_and_a_failed_install(cloud):
    deployment, consumer = cloud
    agent_conf = deployment.process('cyborg-agent').command[-1]
    before = {d['uuid'] for d in _devices(deployment)}
    # NOTE(tests): a driver update re-reads the agent's configuration.
    _set_option(agent_conf, 'fake_driver', 'device_count', 2)
    url = '%s/v2/drivers/%s/fake_driver' % (deployment.url, deployment.host)
    changes = _call('PATCH', url, 200, headers=V25, json={})['changes']
    (added,) = changes['added']
    (started,) = _checked(consumer.wait('accelerator.driver.update.start'))
    (ended,) = _checked(consumer.wait('accelerator.driver.update.end'))
    assert _data(ended)['changed_devices'] == [added]
    assert _data(ended)['host'] == deployment.host
    _checked(consumer.wait('accelerator.device.create', uuid=added))
    _set_option(agent_conf, 'fake_driver', 'device_count', 1)
    changes = _call('PATCH', url, 200, headers=V25, json={})['changes']
    assert changes['removed'] == [added]
    _checked(consumer.wait('accelerator.device.delete', uuid=added))
    assert {d['uuid'] for d in _devices(deployment)} == before
    _call('POST', deployment.url + '/v2/drivers', 409, headers=V25,
          json={'host': deployment.host, 'name': 'fake_driver'})
    (error,) = _checked(consumer.wait('accelerator.driver.install.error',
                                      name='fake_driver'))
    assert error['priority'] == 'ERROR'
    assert 'already enabled' in _data(error)['reason']
    _checked(consumer.wait('accelerator.driver.install.start'))
    assert started['publisher_id'] == 'cyborg-conductor:ctl-1'
    # A device whose description changes (one more handle) is updated.
    _set_option(agent_conf, 'fake_driver', 'accelerators_per_device',
                HANDLES + 1)
    changes = _call('PATCH', url, 200, headers=V25, json={})['changes']
    (device,) = before
    assert changes['changed'] == [device]
    _checked(consumer.wait('accelerator.device.update', uuid=device))


def test_a_drain_is_announced(cloud):
    deployment, consumer = cloud
    (device,) = _devices(deployment)
    instance, arqs = _boot(deployment, 1)
    v26 = dict(OPERATOR, **{'OpenStack-API-Version': 'accelerator 2.6'})
    url = '%s/v2/devices/%s' % (deployment.url, device['uuid'])
    assert _call('POST', url + '/drain', 200, headers=v26)['status'] == (
        'draining')
    (started,) = _checked(consumer.wait('accelerator.device.drain.start',
                                        uuid=device['uuid']))
    assert _data(started)['arqs_left'] == 1
    _call('DELETE', deployment.url + ARQS + '?instance=' + instance, 204,
          headers=NOVA)
    (ended,) = _checked(consumer.wait('accelerator.device.drain.end',
                                      uuid=device['uuid']))
    assert _data(ended)['cancelled'] is False
    assert _call('GET', url, 200, headers=v26)['status'] == 'maintaining'
    _call('POST', url + '/enable', 204)
    changes = _checked(consumer.wait('accelerator.device.status_change',
                                     count=5, uuid=device['uuid']))
    assert [(_data(n)['old_status'], _data(n)['status'])
            for n in changes[2:]] == [('ready', 'draining'),
                                      ('draining', 'maintaining'),
                                      ('maintaining', 'ready')]


def _fpga_deployables(deployment):
    """The Intel FPGA deployables, once each has its provider."""
    def listed():
        found = [d for d in _call('GET', deployment.url + '/v2/deployables',
                                  200)['deployables']
                 if d['driver_name'] == 'intel_fpga']
        return found if found and all(d['rp_uuid'] for d in found) else None

    return processes.wait_for(listed, TIMEOUT, interval=0.1,
                              what='the FPGA deployables in Placement')


def _arria10(deployment):
    """The PAC Arria 10's deployable (its two VFs are its accelerators)."""
    (found,) = [d for d in _fpga_deployables(deployment)
                if d['num_accelerators'] == 2]
    return found


def _program_url(deployment, deployable):
    return '%s/v2/deployables/%s/program' % (deployment.url,
                                             deployable['uuid'])


def _program_body(image):
    return [{'op': 'replace', 'path': '/program',
             'value': [{'image_uuid': image}]}]


def _fpgaconf_fails(deployment, failing):
    """Rewrite the stand-in fpgaconf to fail (exit 1) or succeed."""
    gpu_fpga_hosts.fake_tool(
        os.path.dirname(deployment.fpgaconf), 'fpgaconf',
        exit_code=1 if failing else 0,
        stderr='no such bitstream' if failing else '')


def _fpga_devices(deployment):
    """The uuids of the Intel cards (the fake driver's are 0xABCD's)."""
    return {d['uuid'] for d in _call(
        'GET', deployment.url + '/v2/devices', 200,
        params={'vendor': '0x8086'})['devices']}


def test_driver_install_is_announced(cloud):
    """intel_fpga_driver's install; the tests up to its uninstall use the
    cards it finds on the simulated FPGA host."""
    deployment, consumer = cloud
    assert _fpga_devices(deployment) == set()
    installed = _call('POST', deployment.url + '/v2/drivers', 201,
                      headers=V25, json={'host': deployment.host,
                                         'name': FPGA_DRIVER})
    assert installed['enabled'] is True
    (started,) = _checked(consumer.wait('accelerator.driver.install.start',
                                        name=FPGA_DRIVER))
    assert _data(started)['host'] == deployment.host
    (ended,) = _checked(consumer.wait('accelerator.driver.install.end',
                                      name=FPGA_DRIVER))
    assert ended['priority'] == 'INFO'
    assert ended['publisher_id'] == 'cyborg-conductor:ctl-1'
    assert _data(ended)['host'] == deployment.host
    assert _data(ended)['driver_name'] == 'intel_fpga'
    assert _data(ended)['enabled'] is True
    assert _data(ended)['changed_devices'] == []
    # The agent discovered with it before answering: the PAC Arria 10
    # and the PAC D5005 are there, each announced.
    assert len(_fpga_deployables(deployment)) == 2
    cards = _fpga_devices(deployment)
    assert len(cards) == 2
    for card in cards:
        _checked(consumer.wait('accelerator.device.create', uuid=card,
                               hostname=deployment.host))


def test_fpga_program_is_announced(cloud):
    deployment, consumer = cloud
    fpga = _arria10(deployment)
    image = _signed_image(deployment, 'pac-a10-green.gbs')
    programmed = _call('PATCH', _program_url(deployment, fpga), 200,
                       json=_program_body(image))
    assert programmed['uuid'] == fpga['uuid']
    assert programmed['bitstream_id'] == image
    # The agent loaded it with fpgaconf, on the card's PF.
    argv = gpu_fpga_hosts.recorded_argv(deployment.fpgaconf_record)
    assert argv[:6] == ['--bus', '0x5e', '--device', '0x00',
                        '--function', '0x0']
    (started,) = _checked(consumer.wait(
        'accelerator.deployable.program.start',
        deployable_uuid=fpga['uuid']))
    (ended,) = _checked(consumer.wait('accelerator.deployable.program.end',
                                      deployable_uuid=fpga['uuid']))
    for notification in (started, ended):
        data = _data(notification)
        assert data['image_id'] == image
        assert data['previous_image_id'] is None
        assert data['deployable_name'] == fpga['name']
        assert data['driver_name'] == 'intel_fpga'
        assert data['host'] == deployment.host
        # NOTE(tests): an operator's PATCH, no ARQ's bind, asked for it.
        assert data['arq_uuid'] is None
        assert notification['publisher_id'] == 'cyborg-conductor:ctl-1'
    assert ended['priority'] == 'INFO'


def test_a_failed_program_arrives_on_the_error_queue(cloud):
    deployment, consumer = cloud
    fpga = _arria10(deployment)
    loaded = fpga['bitstream_id']
    assert loaded
    image = _signed_image(deployment, 'pac-a10-red.gbs')
    _fpgaconf_fails(deployment, True)
    try:
        failure = _call('PATCH', _program_url(deployment, fpga), 409,
                        json=_program_body(image))
    finally:
        _fpgaconf_fails(deployment, False)
    assert 'no such bitstream' in str(failure)
    (started,) = _checked(consumer.wait(
        'accelerator.deployable.program.start',
        deployable_uuid=fpga['uuid'], image_id=image))
    (error,) = _checked(consumer.wait('accelerator.deployable.program.error',
                                      deployable_uuid=fpga['uuid']))
    assert error['priority'] == 'ERROR'
    assert _data(error)['image_id'] == image
    # The deployable still holds the image loaded before.
    assert _data(error)['previous_image_id'] == loaded
    assert 'no such bitstream' in _data(error)['reason']
    assert 'fpgaconf' in _data(error)['reason']
    assert _data(started)['previous_image_id'] == loaded
    assert not [n for n in consumer.received
                if n['event_type'] == 'accelerator.deployable.program.end'
                and _data(n)['image_id'] == image]


def test_a_tampered_image_is_never_loaded(cloud):
    """One byte changed after signing: the agent refuses the image before
    fpgaconf runs, and the failure says why."""
    deployment, consumer = cloud
    fpga = _arria10(deployment)
    loaded = fpga['bitstream_id']
    data = b'pac-a10-blue' * 4096
    image = deployment.glance.add(data=signing.tampered(data),
                                  name='pac-a10-blue.gbs',
                                  **deployment.signer.properties(data))
    os.unlink(deployment.fpgaconf_record)
    failure = _call('PATCH', _program_url(deployment, fpga), 409,
                    json=_program_body(image))
    assert 'Image %s is refused by signature verification' % image in (
        str(failure))
    assert not os.path.exists(deployment.fpgaconf_record), (
        'fpgaconf ran on a tampered image')
    (error,) = _checked(consumer.wait('accelerator.deployable.program.error',
                                      deployable_uuid=fpga['uuid'],
                                      image_id=image))
    assert 'does not match img_signature' in _data(error)['reason']
    fpga = _arria10(deployment)
    assert fpga['bitstream_id'] == loaded


def test_an_unsigned_image_is_refused(cloud):
    deployment, _consumer = cloud
    fpga = _arria10(deployment)
    image = deployment.glance.add(name='pac-a10-unsigned.gbs')
    failure = _call('PATCH', _program_url(deployment, fpga), 409,
                    json=_program_body(image))
    assert 'it is not signed' in str(failure)
    assert not os.path.exists(deployment.fpgaconf_record)


def test_a_signed_image_loads(cloud):
    deployment, _consumer = cloud
    fpga = _arria10(deployment)
    image = _signed_image(deployment, 'pac-a10-signed.gbs',
                          data=b'pac-a10-signed' * 4096)
    programmed = _call('PATCH', _program_url(deployment, fpga), 200,
                       json=_program_body(image))
    assert programmed['bitstream_id'] == image
    argv = gpu_fpga_hosts.recorded_argv(deployment.fpgaconf_record)
    assert argv[:2] == ['--bus', '0x5e']


def test_a_failed_driver_update_arrives_on_the_error_queue(cloud):
    deployment, consumer = cloud
    image = _signed_image(deployment, 'pac-green-for-every-card.gbs')
    url = '%s/v2/drivers/%s/%s' % (deployment.url, deployment.host,
                                   FPGA_DRIVER)
    _fpgaconf_fails(deployment, True)
    try:
        failure = _call('PATCH', url, 409, headers=V25,
                        json={'image_uuid': image})
    finally:
        _fpgaconf_fails(deployment, False)
    assert 'no such bitstream' in str(failure)
    (started,) = _checked(consumer.wait('accelerator.driver.update.start',
                                        name=FPGA_DRIVER))
    assert _data(started)['image_id'] == image
    (error,) = _checked(consumer.wait('accelerator.driver.update.error',
                                      name=FPGA_DRIVER))
    assert error['priority'] == 'ERROR'
    assert error['publisher_id'] == 'cyborg-conductor:ctl-1'
    assert _data(error)['host'] == deployment.host
    assert _data(error)['image_id'] == image
    assert 'no such bitstream' in _data(error)['reason']
    assert not [n for n in consumer.received
                if n['event_type'] == 'accelerator.driver.update.end'
                and _data(n)['name'] == FPGA_DRIVER]
    # The driver stays enabled, with its options as they were.
    drivers = _call('GET', deployment.url + '/v2/drivers', 200, headers=V25,
                    params={'host': deployment.host})['drivers']
    assert {d['name']: d['enabled'] for d in drivers}[FPGA_DRIVER] is True


def test_the_cli_says_why_a_tampered_image_is_refused(cloud):
    """``openstack accelerator driver update --image`` with an image
    changed after signing: the command fails with the agent's reason,
    and no card was programmed."""
    deployment, _consumer = cloud
    clis = test_cli.build_cli_venvs()
    cli = test_cli.Cli('intree', clis['intree'], deployment.url)
    data = b'pac-green-for-every-card' * 4096
    image = deployment.glance.add(data=signing.tampered(data),
                                  name='tampered-green.gbs',
                                  **deployment.signer.properties(data))
    if os.path.exists(deployment.fpgaconf_record):
        os.unlink(deployment.fpgaconf_record)
    done = cli.run('accelerator', 'driver', 'update', deployment.host,
                   FPGA_DRIVER, '--image', image)
    assert done.returncode == 1, test_cli.explain(cli, done)
    assert 'Image %s is refused by signature verification' % image in (
        done.stderr)
    assert not os.path.exists(deployment.fpgaconf_record), (
        'fpgaconf ran on a tampered image')


def test_driver_uninstall_is_announced(cloud):
    deployment, consumer = cloud
    cards = _fpga_devices(deployment)
    url = '%s/v2/drivers/%s/%s' % (deployment.url, deployment.host,
                                   FPGA_DRIVER)
    _call('DELETE', url, 204, headers=V25)
    (started,) = _checked(consumer.wait('accelerator.driver.uninstall.start',
                                        name=FPGA_DRIVER))
    assert _data(started)['host'] == deployment.host
    (ended,) = _checked(consumer.wait('accelerator.driver.uninstall.end',
                                      name=FPGA_DRIVER))
    assert ended['priority'] == 'INFO'
    assert ended['publisher_id'] == 'cyborg-conductor:ctl-1'
    assert _data(ended)['host'] == deployment.host
    assert _data(ended)['enabled'] is False
    assert _data(ended)['driver_name'] == 'intel_fpga'
    # Its cards left with the agent's report; the fake device stays.
    for card in cards:
        _checked(consumer.wait('accelerator.device.delete', uuid=card))
    assert _fpga_devices(deployment) == set()
    assert len(_devices(deployment)) == 1
    # Uninstalling it again is refused before the agent is asked: no
    # second start, and no error notification.
    _call('DELETE', url, 404, headers=V25)
    assert [n['event_type'] for n in consumer.received
            if n['event_type'].startswith('accelerator.driver.uninstall.')
            ] == ['accelerator.driver.uninstall.start',
                  'accelerator.driver.uninstall.end']


def test_everything_received_matches_its_sample(cloud):
    """What the tests above drove, and nothing else, arrived, each as its
    sample says (the module's teardown checks the stragglers too)."""
    _deployment, consumer = cloud
    received = {n['event_type'] for n in consumer.received}
    assert received <= set(samples.names())
    assert {'accelerator.device.create', 'accelerator.device.delete',
            'accelerator.device.update', 'accelerator.device.status_change',
            'accelerator.arq.create', 'accelerator.arq.bind.start',
            'accelerator.arq.bind.end', 'accelerator.arq.bind.error',
            'accelerator.arq.unbind', 'accelerator.arq.delete',
            'accelerator.driver.update.start',
            'accelerator.driver.update.end',
            'accelerator.driver.install.start',
            'accelerator.driver.install.error',
            'accelerator.device.drain.start',
            'accelerator.device.drain.end',
            'accelerator.driver.install.end',
            'accelerator.driver.update.error',
            'accelerator.driver.uninstall.start',
            'accelerator.driver.uninstall.end',
            'accelerator.deployable.program.start',
            'accelerator.deployable.program.end',
            'accelerator.deployable.program.error'} <= received
    _checked(consumer.received)
