"""Object fingerprints: a field change without a version bump fails here."""

from oslo_versionedobjects import fixture

from cyborg import objects
from cyborg.objects import base

# NOTE(objects): when a test below fails, bump the object's VERSION, add a
# line to its version history and, for a new field, handle it in
# obj_make_compatible; then put the new fingerprint here.
EXPECTED = {
    'AttachHandle': '1.0-7403546dab7be1c9a01d6575184878ac',
    'Attribute': '1.0-dcddda2b95da6859965dbd1873716452',
    'ControlpathID': '1.0-d5cdb740fce9af883183a357b7053e4b',
    'Deployable': '1.0-64e24b18c5557ba5dd83fbbc3f0751a0',
    'Device': '1.0-45a8dbb29ca245bc95afb9c806bdfa45',
    'Service': '1.0-0eb9b63f5a06e080f1455aa628c65ff2',
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
