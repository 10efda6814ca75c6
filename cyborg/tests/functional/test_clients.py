"""openstacksdk's accelerator proxy against both deployments."""

import uuid

from openstack import connection
from openstack import exceptions as sdk_exc
import pytest

from cyborg.tests import deployments
from cyborg.tests import faults

pytestmark = pytest.mark.functional

GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]
# NOTE(tests): the embedded default's fake device has 16 handles; the
# services get as many, so that both answer alike.
HANDLES = 16
TIMEOUT = 30


def _connect(url, **options):
    # NOTE(tests): the noauth API needs no Keystone: auth_type none and the
    # versioned endpoint, as a catalog would list it, are all it takes.
    return connection.Connection(
        auth_type='none', accelerator_endpoint_override=url + '/v2',
        **options)


@pytest.fixture(scope='module', params=deployments.KINDS)
def target(request, tmp_path_factory):
    """The embedded default, or API, conductor and agent as processes."""
    with deployments.start(request.param,
                           tmp_path_factory.mktemp(request.param),
                           handles=HANDLES) as found:
        yield found


@pytest.fixture(scope='module')
def conn(target):
    return _connect(target.url)


@pytest.fixture
def accel(conn):
    return conn.accelerator


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


def _binding(host, instance, rp_uuid):
    """Nova's bind patch for one ARQ."""
    return [{'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]


def test_devices_and_deployables(accel, target):
    devices = list(accel.devices())
    assert [(d.hostname, d.type, d.vendor) for d in devices] == [
        (target.host, 'FPGA', '0xABCD')]
    device = accel.get_device(devices[0].uuid)
    assert device.id == devices[0].uuid
    assert device.model == devices[0].model
    # NOTE(tests): the sdk sends no microversion: 2.0 has no status.
    assert device.status is None

    deployables = list(accel.deployables())
    assert [(d.name, d.num_accelerators) for d in deployables] == [
        ('%s_FakeDevice' % target.host, HANDLES)]
    deployable = accel.get_deployable(deployables[0].id)
    assert deployable.name == deployables[0].name
    assert uuid.UUID(_rp_uuid(accel, deployable.id))


def test_device_status_at_a_microversion(target):
    accel = _connect(target.url,
                     accelerator_default_microversion='2.3').accelerator
    # NOTE(tests): a discovered device waits inactive for an operator;
    # at 2.3 it reads as upstream's "maintaining" (not schedulable), and
    # the lifecycle name shows from 2.4.
    assert [d.status for d in accel.devices()] == ['maintaining']
    latest = _connect(target.url,
                      accelerator_default_microversion='2.4').accelerator
    assert [d.status for d in latest.devices()] == ['inactive']


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


def test_device_profile_by_name_from_2_2(target, profile):
    accel = _connect(target.url,
                     accelerator_default_microversion='2.2').accelerator
    assert accel.get_device_profile(profile.name).uuid == profile.uuid


def test_accelerator_requests_bound_as_nova_does(accel, target, profile):
    # NOTE(tests): a bind takes a ready device only.
    target.activate_devices()
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
                       json={arqs[0].uuid: _binding(target.host, instance,
                                                   rp_uuid)})
    assert resp.status_code == 202
    bound = accel.wait_for_status(arqs[0], 'Bound', failures=['BindFailed'],
                                  interval=0.1, wait=TIMEOUT,
                                  attribute='state')
    assert (bound.hostname, bound.device_rp_uuid, bound.instance_uuid) == (
        target.host, rp_uuid, instance)
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


def test_sdk_patch_accelerator_request(accel, target, profile):
    # NOTE(tests): a bind takes a ready device only.
    target.activate_devices()
    rp_uuid = _rp_uuid(accel, next(accel.deployables()).id)
    arq = accel.create_accelerator_request(device_profile_name=profile.name)
    try:
        accel.patch_accelerator_request(
            arq, _binding(target.host, str(uuid.uuid4()), rp_uuid))
        bound = accel.wait_for_status(arq, 'Bound', failures=['BindFailed'],
                                      interval=0.1, wait=TIMEOUT,
                                      attribute='state')
        assert bound.attach_handle_type == 'TEST_PCI'
    finally:
        accel.delete_accelerator_request(arq)


# --- The upstream contract at 2.0-2.3, as the sdk meets it -------------------


def test_sdk_disable_and_enable_without_a_microversion(accel, target):
    """The sdk's disable_device/enable_device send no version header and
    ignore the answer: the device must really change (a 404 would leave it
    schedulable in silence)."""
    at_23 = _connect(target.url,
                     accelerator_default_microversion='2.3').accelerator
    at_24 = _connect(target.url,
                     accelerator_default_microversion='2.4').accelerator
    (device,) = accel.devices()
    accel.disable_device(device)
    assert at_23.get_device(device.uuid).status == 'maintaining'
    assert at_24.get_device(device.uuid).status == 'maintaining'
    accel.enable_device(device)
    # upstream's two values up to 2.3; the lifecycle name from 2.4
    assert at_23.get_device(device.uuid).status == 'enabled'
    assert at_24.get_device(device.uuid).status == 'ready'
    assert [d.status for d in at_23.devices()] == ['enabled']
    accel.disable_device(device)
    assert [d.status for d in at_23.devices()] == ['maintaining']
    accel.enable_device(device)
    assert [d.status for d in at_23.devices()] == ['enabled']


def test_device_profile_by_name_below_2_2_is_406(accel, profile):
    with pytest.raises(sdk_exc.HttpException) as caught:
        accel.get_device_profile(profile.name)
    assert caught.value.status_code == 406
    assert 'needs microversion 2.2' in str(caught.value)


def test_device_profile_groups_as_upstream_validates_them(accel):
    name = 'sdk-%s' % uuid.uuid4().hex[:8]
    created = accel.create_device_profile(name=name, groups=[
        {'resources: FPGA': '1', 'trait: CUSTOM_FAKE_DEVICE': 'required'}])
    try:
        assert created.groups == [{'resources:FPGA': '1',
                                   'trait:CUSTOM_FAKE_DEVICE': 'required'}]
        assert accel.get_device_profile(created.uuid).groups == (
            created.groups)
    finally:
        accel.delete_device_profile(created)
    for group, words in (
            ({'resources:FPGA': '1', 'trait:OWNER_CYBORG': 'required'},
             "'OWNER_CYBORG' is not a trait a device profile may ask for"),
            ({'resources:DISK_GB': '1'},
             "'DISK_GB' is not a resource class a device profile may ask "
             "for")):
        with pytest.raises(sdk_exc.BadRequestException) as caught:
            accel.create_device_profile(name=name, groups=[group])
        assert words in str(caught.value)
    assert name not in [p.name for p in accel.device_profiles()]


def test_resolved_arqs_without_an_instance(accel, target, profile):
    # NOTE(tests): a bind takes a ready device only.
    target.activate_devices()
    arqs = [accel.create_accelerator_request(device_profile_name=profile.name)
            for _ in range(2)]
    try:
        rp_uuid = _rp_uuid(accel, next(accel.deployables()).id)
        instance = str(uuid.uuid4())
        resp = accel.patch('/accelerator_requests', json={
            arqs[0].uuid: _binding(target.host, instance, rp_uuid)})
        assert resp.status_code == 202
        accel.wait_for_status(arqs[0], 'Bound', failures=['BindFailed'],
                              interval=0.1, wait=TIMEOUT, attribute='state')
        resolved = accel.get('/accelerator_requests',
                             params={'bind_state': 'resolved'})
        assert resolved.status_code == 200
        assert [a['uuid'] for a in resolved.json()['arqs']] == [
            arqs[0].uuid]
    finally:
        for arq in arqs:
            accel.delete_accelerator_request(arq)


def test_empty_device_profile_name_is_404(accel):
    with pytest.raises(sdk_exc.NotFoundException):
        accel.create_accelerator_request(device_profile_name='')


def test_a_later_route_says_from_which_version(accel):
    (device,) = accel.devices()
    resp = accel.post('/devices/%s/activate' % device.uuid, json={},
                      raise_exc=False)
    assert resp.status_code == 404
    fault = faults.fault_of(resp.json())
    assert fault['faultstring'] == (
        'POST /v2/devices/%s/activate exists from microversion 2.4; send '
        '"OpenStack-API-Version: accelerator 2.4" or later.' % device.uuid)


def test_sdk_attribute_create_get_delete(accel):
    # NOTE(tests): the sdk wraps the body in its resource key,
    # {"attribute": {...}}; the deployable is named by the integer id its
    # listed attributes carry.
    (deployable_id,) = {a.deployable_id for a in accel.attributes()}
    key = 'rack-%s' % uuid.uuid4().hex[:6]
    created = accel.create_attribute(deployable_id=deployable_id, key=key,
                                     value='r12')
    assert (created.key, created.value, created.deployable_id) == (
        key, 'r12', deployable_id)
    fetched = accel.get_attribute(created.uuid)
    assert (fetched.key, fetched.value) == (key, 'r12')
    assert key in [a.key for a in accel.attributes()]
    accel.delete_attribute(created.uuid, ignore_missing=False)
    with pytest.raises(sdk_exc.NotFoundException):
        accel.get_attribute(created.uuid)
    assert key not in [a.key for a in accel.attributes()]
