"""Object fingerprints: a field change without a version bump fails here."""

from oslo_versionedobjects import fixture

from cyborg import objects
from cyborg.objects import base

# NOTE(objects): when a test below fails, bump the object's VERSION, add a
# line to its version history and, for a new field, handle it in
# obj_make_compatible; then put the new fingerprint here.
EXPECTED = {
    'Accelerator': '1.0-c3200cef36715ea6588630e221c9d974',
    'AcceleratorRequest': '1.0-a7de19c7ce2891d8b0ca45e7fd3499cb',
    'AttachHandle': '1.0-7403546dab7be1c9a01d6575184878ac',
    'Attribute': '1.0-dcddda2b95da6859965dbd1873716452',
    'ControlpathID': '1.0-d5cdb740fce9af883183a357b7053e4b',
    'Deployable': '1.2-95a1302eced91c2341dd4965153cea2a',
    'Device': '1.5-dd7b2fa7faf6668557f0ca3ef1f7c898',
    'DeviceProfile': '1.0-7b4ba29bf19a32e5612a8c4f03f2ec54',
    'Service': '1.3-0b1219f41dde7023582d4b8fb89b3ffb',
    # NOTE(objects): versioned notifications (cyborg/notifications/).
    'ArqNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'ArqPayload': '1.0-d0dba0967c7b63f7d0555a23427a6ede',
    'DeviceHealthNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'DeviceHealthPayload': '1.0-0a36dc8daf3105871013e5337f8150a4',
    'DeviceNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'DevicePayload': '1.0-f6bf3df6d9bdcc58e993cc0f23656f1f',
    'DeviceStatusNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'DeviceStatusPayload': '1.0-f0307aeabdb923c906f39b594242b202',
    'DrainNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'DrainPayload': '1.0-5e003543aac266a6045502fea8ab41c5',
    'DriverNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'DriverPayload': '1.0-3ea7c24eecb174c7fc1d5091e3506044',
    'EventType': '1.0-1a5342226ed1e3411adb64ed118cd5a6',
    'NotificationPublisher': '1.0-578ee5fea2922ff32e8917621f140857',
    'ProgramNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'ProgramPayload': '1.0-24c9d956198a53be83b5c1ff77ff3406',
    'ScrubNotification': '1.0-cb650540a75842afc1111632e58d9157',
    'ScrubPayload': '1.0-2c4c8fc062c71869e13c15ff68043b1d',
}


def test_versions_match_fingerprints():
    objects.register_all()
    checker = fixture.ObjectVersionChecker(
        base.CyborgObjectRegistry.obj_classes())
    expected, actual = checker.test_hashes(EXPECTED)
    assert expected == actual, (
        'Objects changed; bump their versions and update EXPECTED')


def test_every_registered_object_is_listed():
    objects.register_all()
    assert set(base.CyborgObjectRegistry.obj_classes()) == set(EXPECTED)


def test_device_backports_to_1_0(db, ctx):
    from cyborg.objects import device
    dev = device.Device(ctx, uuid='359c0990-0258-44fd-8b05-fc510ac3d022',
                        type='GPU', vendor='0x10de', model='m',
                        hostname='h', status='inactive',
                        services=['gpu.compute'], status_reason=None)
    primitive = dev.obj_to_primitive(target_version='1.0')
    data = primitive['cyborg_object.data']
    assert 'services' not in data and 'status_reason' not in data


def test_service_backports_to_1_1(ctx):
    from cyborg.objects import service
    svc = service.Service(ctx, host='node1', binary='cyborg-agent',
                          version='2025.1', rpc_version='1.4')
    data = svc.obj_to_primitive(target_version='1.1')['cyborg_object.data']
    assert 'rpc_version' not in data and data['version'] == '2025.1'


def test_accelerator_view_round_trips(ctx):
    from cyborg.objects import accelerator
    view = {'uuid': 'a2f3b6a4-6c1e-4c55-9d7e-1f1b2f0a9b01', 'name': 'acc',
            'host': None, 'deployable_uuid': None, 'device_uuid': None,
            'created_at': '2026-01-01T00:00:00', 'updated_at': None,
            'acc_specs': {'remote': 1, 'num': 1, 'device_type': None,
                          'acc_capability': {'traits': ['CUSTOM_A']}},
            'revision': 3,
            'attachments': [{'type': 'host', 'state': 'attached',
                             'via': 'v1', 'host': 'node1'}]}
    obj = accelerator.Accelerator.from_view(ctx, view)
    assert obj.as_view() == view
    assert not obj.obj_what_changed()
