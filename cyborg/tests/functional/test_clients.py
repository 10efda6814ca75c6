"""openstacksdk's accelerator proxy against the embedded default."""

import signal
import uuid

from openstack import connection
from openstack import exceptions as sdk_exc
import pytest
import requests

from cyborg.tests import processes

pytestmark = pytest.mark.functional

HOST = 'aio'
GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]
TIMEOUT = 30


def _deployable(url):
    """The fake driver's deployable, once its provider uuid is known."""
    resp = requests.get(url + '/v2/deployables', timeout=5)
    if resp.status_code != 200:
        return None
    found = resp.json()['deployables']
    return found[0] if len(found) == 1 and found[0]['rp_uuid'] else None


def _connect(url, **options):
    # NOTE(tests): the noauth API needs no Keystone: auth_type none and the
    # versioned endpoint, as a catalog would list it, are all it takes.
    return connection.Connection(
        auth_type='none', accelerator_endpoint_override=url + '/v2',
        **options)


@pytest.fixture(scope='module')
def aio(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('clients')
    port, placement_port = processes.free_port(), processes.free_port()
    conf = processes.write_config(tmp_path / 'aio.conf', {
        'DEFAULT': {'state_path': str(tmp_path / 'state'), 'host': HOST},
        'api': {'port': port},
        'embedded_placement': {'port': placement_port},
    })
    proc = processes.Process('cyborg-all-in-one', conf, tmp_path)
    url = 'http://127.0.0.1:%d' % port
    try:
        processes.wait_for(lambda: _deployable(url), TIMEOUT,
                           interval=0.1, what='the fake deployable')
        yield {'url': url, 'conn': _connect(url), 'proc': proc}
    finally:
        code = proc.stop(signal.SIGINT)
    assert code == 0, proc.log()
    assert 'Traceback' not in proc.log()


@pytest.fixture
def accel(aio):
    return aio['conn'].accelerator


@pytest.fixture
def profile(accel):
    """A device profile of one FPGA group, removed through the sdk."""
    created = accel.create_device_profile(
        name='sdk-%s' % uuid.uuid4().hex[:8], groups=GROUPS)
    yield created
    accel.delete_device_profile(created, ignore_missing=True)


def _rp_uuid(accel, deployable_uuid):
    # NOTE(tests): the sdk's Deployable drops rp_uuid, which a binding
    # needs; Nova takes it from its allocation, here the proxy's own
    # adapter reads it.
    body = accel.get('/deployables/%s' % deployable_uuid).json()
    return body['rp_uuid']


def _binding(instance, rp_uuid):
    """Nova's bind patch for one ARQ."""
    return [{'op': 'add', 'path': '/hostname', 'value': HOST},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]


def test_devices_and_deployables(accel):
    devices = list(accel.devices())
    assert [(d.hostname, d.type, d.vendor) for d in devices] == [
        (HOST, 'FPGA', '0xABCD')]
    device = accel.get_device(devices[0].uuid)
    assert device.id == devices[0].uuid
    assert device.model == devices[0].model
    # NOTE(tests): the sdk sends no microversion: 2.0 has no status.
    assert device.status is None

    deployables = list(accel.deployables())
    assert [(d.name, d.num_accelerators) for d in deployables] == [
        ('%s_FakeDevice' % HOST, 16)]
    deployable = accel.get_deployable(deployables[0].id)
    assert deployable.name == deployables[0].name
    assert uuid.UUID(_rp_uuid(accel, deployable.id))


def test_device_status_at_a_microversion(aio):
    accel = _connect(aio['url'],
                     accelerator_default_microversion='2.3').accelerator
    # NOTE(tests): a discovered device waits inactive for an operator,
    # where upstream's would be enabled; the sdk passes the string on.
    assert [d.status for d in accel.devices()] == ['inactive']


def test_device_profile_create_list_get_delete(accel):
    name = 'sdk-%s' % uuid.uuid4().hex[:8]
    created = accel.create_device_profile(name=name, groups=GROUPS,
                                          description='from the sdk')
    assert uuid.UUID(created.uuid)
    assert (created.name, created.groups, created.description) == (
        name, GROUPS, 'from the sdk')
    assert created.uuid in [p.uuid for p in accel.device_profiles()]
    # NOTE(tests): GET one answers {"device_profile": {...}}, which the
    # sdk unwraps by its resource key.
    got = accel.get_device_profile(created.uuid)
    assert (got.name, got.groups) == (name, GROUPS)

    accel.delete_device_profile(created, ignore_missing=False)
    with pytest.raises(sdk_exc.NotFoundException):
        accel.get_device_profile(created.uuid)
    assert created.uuid not in [p.uuid for p in accel.device_profiles()]


def test_device_profile_by_name_from_2_2(aio, profile):
    accel = _connect(aio['url'],
                     accelerator_default_microversion='2.2').accelerator
    assert accel.get_device_profile(profile.name).uuid == profile.uuid


def test_accelerator_requests_bound_as_nova_does(accel, profile):
    deployable = next(accel.deployables())
    rp_uuid = _rp_uuid(accel, deployable.id)
    arqs = [accel.create_accelerator_request(device_profile_name=profile.name)
            for _ in range(2)]
    for arq in arqs:
        assert (arq.state, arq.device_profile_name,
                arq.device_profile_group_id) == ('Initial', profile.name, 0)
        assert (arq.attach_handle_type, arq.attach_handle_info) == ('', {})
        assert arq.hostname is None and arq.instance_uuid is None
    listed = {a.uuid: a.state for a in accel.accelerator_requests()}
    assert {a.uuid: 'Initial' for a in arqs}.items() <= listed.items()

    instance = str(uuid.uuid4())
    # NOTE(tests): the body Nova sends, through the proxy's adapter: the
    # sdk's own patch call targets /accelerator_requests/{uuid}, see
    # test_sdk_patch_accelerator_request.
    resp = accel.patch('/accelerator_requests',
                       json={arqs[0].uuid: _binding(instance, rp_uuid)})
    assert resp.status_code == 202
    bound = accel.wait_for_status(arqs[0], 'Bound', failures=['BindFailed'],
                                  interval=0.1, wait=TIMEOUT,
                                  attribute='state')
    assert (bound.hostname, bound.device_rp_uuid, bound.instance_uuid) == (
        HOST, rp_uuid, instance)
    assert bound.attach_handle_type == 'TEST_PCI'
    assert bound.attach_handle_info == {
        'domain': '0000', 'bus': '0c', 'device': '00', 'function': '0'}
    assert accel.get_accelerator_request(arqs[1].uuid).state == 'Initial'
    # NOTE(tests): the sdk drops the instance and bind_state filters;
    # Nova's query goes through the adapter.
    resolved = accel.get('/accelerator_requests', params={
        'instance': instance, 'bind_state': 'resolved'}).json()['arqs']
    assert [a['uuid'] for a in resolved] == [arqs[0].uuid]

    for arq in arqs:
        accel.delete_accelerator_request(arq, ignore_missing=False)
    for arq in arqs:
        with pytest.raises(sdk_exc.NotFoundException):
            accel.get_accelerator_request(arq.uuid)
    # A second delete is a 404 that ignore_missing swallows.
    accel.delete_accelerator_request(arqs[0])
    accel.delete_device_profile(profile, ignore_missing=False)
    assert profile.uuid not in [p.uuid for p in accel.device_profiles()]


def test_sdk_patch_accelerator_request(accel, profile):
    rp_uuid = _rp_uuid(accel, next(accel.deployables()).id)
    arq = accel.create_accelerator_request(device_profile_name=profile.name)
    try:
        accel.patch_accelerator_request(
            arq, _binding(str(uuid.uuid4()), rp_uuid))
        bound = accel.wait_for_status(arq, 'Bound', failures=['BindFailed'],
                                      interval=0.1, wait=TIMEOUT,
                                      attribute='state')
        assert bound.attach_handle_type == 'TEST_PCI'
    finally:
        accel.delete_accelerator_request(arq)
