"""Two real conductors race to program one device; the claim lets one in.

cyborg-api, two cyborg-conductors (ctl-1, ctl-2) and a cyborg-agent run
as processes over RabbitMQ and MariaDB. The agent's fake driver takes
``[fake_driver] program_delay`` to program, so the first programming is
still running when the second request arrives; the second is refused
(409, DeviceClaimed) and the agent programs once. A conductor killed
while it programs leaves its claim, which the other clears once the dead
one has not heartbeated for ``[conductor] takeover_after``.
"""

import concurrent.futures
import re
import signal

from oslo_config import cfg
import oslo_messaging as messaging
import pytest
import requests

from cyborg import context as cyborg_context
from cyborg.tests import deployments
from cyborg.tests import fake_services
from cyborg.tests import notification_consumer
from cyborg.tests import processes

pytestmark = pytest.mark.functional

TIMEOUT = 60
#: Seconds the fake driver takes to program.
DELAY = 4
#: [conductor] takeover_after: short, so a dead conductor's claim goes soon.
TAKEOVER_AFTER = 5
OPERATOR = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
            'X-User-Id': 'operator'}


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('claims')
    with fake_services.serve_glance() as glance:
        sections = {
            'glance': {'auth_type': 'admin_token', 'endpoint': glance.url,
                       'token': 'glance-token'},
            'fake_driver': {'program_delay': DELAY},
            'conductor': {'heartbeat_interval': 1,
                          'takeover_after': TAKEOVER_AFTER},
        }
        with deployments.services(tmp, handles=2, devices=1,
                                  sections=sections,
                                  conductors=2) as deployment:
            deployment.glance = glance
            yield deployment


@pytest.fixture
def conductor_rpc(cloud):
    """``call(server, method, **kwargs)``: an RPC call to one conductor."""
    url = notification_consumer.option(cloud.conductor.command[-1],
                                       'DEFAULT', 'transport_url')
    # NOTE(tests): the session's configuration (tests/conftest.py), with
    # oslo.messaging's options registered; the URL is the deployment's.
    transport = messaging.get_rpc_transport(cfg.CONF, url=url)
    context = cyborg_context.get_admin_context().to_dict()

    def call(server, method, timeout=TIMEOUT, **kwargs):
        client = messaging.get_rpc_client(
            transport, messaging.Target(exchange='cyborg',
                                        topic='cyborg-conductor',
                                        server=server, version='1.5'),
            timeout=timeout)
        return client.call(context, method, **kwargs)

    yield call
    transport.cleanup()


def _deployable(cloud):
    (found,) = cloud.deployables()
    return found


def _agent_log(cloud):
    return cloud.process('cyborg-agent').log()


def _programmed(text, name):
    return text.count('Programmed %s (simulated)' % name)


def _wait_programming(cloud, mark, name, running):
    """Until the agent programs ``name``; ``running`` (the call's future)
    must not end first."""
    processes.wait_for(
        lambda: running.done() or
        'Programming %s with' % name in _agent_log(cloud)[mark:],
        TIMEOUT, interval=0.05, what='the agent to start programming')
    assert not running.done(), running.result()


def test_the_second_conductor_is_refused_while_the_first_programs(
        cloud, conductor_rpc):
    dep = _deployable(cloud)
    device = cloud.only_device()
    first, second = (cloud.glance.add(name='first.gbs'),
                     cloud.glance.add(name='second.gbs'))
    mark = len(_agent_log(cloud))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        running = pool.submit(conductor_rpc, 'ctl-1', 'program_deployable',
                              uuid=dep['uuid'], image_id=first)
        _wait_programming(cloud, mark, dep['name'], running)
        with pytest.raises(messaging.RemoteError) as caught:
            conductor_rpc('ctl-2', 'program_deployable', uuid=dep['uuid'],
                          image_id=second)
        programmed = running.result(TIMEOUT)
    assert caught.value.exc_type == 'DeviceClaimed'
    refusal = caught.value.value
    assert device['uuid'] in refusal
    assert 'conductor ctl-1 is running program' in refusal
    # The agent programmed once, with the first image.
    log = _agent_log(cloud)[mark:]
    assert _programmed(log, dep['name']) == 1, log
    assert second not in log
    assert programmed['cyborg_object.data']['bitstream_id'] == first
    # Released once done: the second conductor now programs.
    conductor_rpc('ctl-2', 'program_deployable', uuid=dep['uuid'],
                  image_id=second)
    assert _deployable(cloud)['bitstream_id'] == second


def _patch(cloud, dep, image):
    return requests.patch(
        '%s/v2/deployables/%s/program' % (cloud.url, dep['uuid']),
        headers=OPERATOR, timeout=TIMEOUT,
        json=[{'op': 'replace', 'path': '/program',
               'value': [{'image_uuid': image}]}])


def test_two_programs_through_the_api_run_once_and_one_is_409(cloud):
    dep = _deployable(cloud)
    device = cloud.only_device()
    images = [cloud.glance.add(name='api-%d.gbs' % index)
              for index in range(2)]
    mark = len(_agent_log(cloud))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda image: _patch(cloud, dep, image),
                                images))
    assert sorted(resp.status_code for resp in answers) == [200, 409], [
        resp.text for resp in answers]
    ok, refused = sorted(answers, key=lambda resp: resp.status_code)
    assert device['uuid'] in refused.text
    assert re.search(r'conductor ctl-[12] is running program', refused.text)
    log = _agent_log(cloud)[mark:]
    assert _programmed(log, dep['name']) == 1, log
    assert _deployable(cloud)['bitstream_id'] == ok.json()['bitstream_id']
    # Nothing stays claimed: the device takes the next programming.
    assert _patch(cloud, dep, images[0]).status_code == 200


def _conductor(cloud, host):
    return next(p for p in cloud.conductors
                if 'host = %s\n' % host in open(p.command[-1]).read())


def test_a_killed_conductors_claim_is_cleared_by_the_other(cloud,
                                                          conductor_rpc):
    dep = _deployable(cloud)
    device = cloud.only_device()
    first, second = (cloud.glance.add(name='killed.gbs'),
                     cloud.glance.add(name='after.gbs'))
    victim, survivor = _conductor(cloud, 'ctl-1'), _conductor(cloud, 'ctl-2')
    mark, survivor_mark = len(_agent_log(cloud)), len(survivor.log())
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            running = pool.submit(conductor_rpc, 'ctl-1', 'program_deployable',
                                  timeout=DELAY + 5, uuid=dep['uuid'],
                                  image_id=first)
            _wait_programming(cloud, mark, dep['name'], running)
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            # The dead conductor's claim holds until takeover clears it.
            with pytest.raises(messaging.RemoteError) as caught:
                conductor_rpc('ctl-2', 'program_deployable', uuid=dep['uuid'],
                              image_id=second)
            with pytest.raises(messaging.MessagingTimeout):
                running.result(TIMEOUT)
        assert 'conductor ctl-1 is running program' in caught.value.value
        cleared = ('Cleared the program claim on device %s of conductor '
                   'ctl-1, which stopped' % device['uuid'])
        processes.wait_for(lambda: cleared in survivor.log()[survivor_mark:],
                           TAKEOVER_AFTER + 20, interval=0.2,
                           what='the survivor to clear the claim')
        conductor_rpc('ctl-2', 'program_deployable', uuid=dep['uuid'],
                      image_id=second)
        assert _deployable(cloud)['bitstream_id'] == second
    finally:
        victim.stop()
        victim.start()
        processes.wait_for(
            lambda: 'started on host' in victim.log()[victim.offset:],
            TIMEOUT, interval=0.05, what='ctl-1 to listen again')
