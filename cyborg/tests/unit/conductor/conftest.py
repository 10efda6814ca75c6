"""Fixtures shared by the conductor's unit tests."""

import pytest

from cyborg import states
from cyborg.conductor import inventory
from cyborg.db import devices as device_db
from cyborg.drivers import base
from cyborg.drivers import fake
from cyborg.drivers import report
from cyborg.objects import device as device_obj


@pytest.fixture
def ready_device(db, ctx, override):
    """node1's one fake device (four handles), reported and ready."""
    override('accelerators_per_device', 4, group='fake_driver')
    inventory.apply_report(ctx, report.HostReport(
        host='node1', devices=fake.FakeDriver().discover(
            base.DiscoveryContext('node1'))))
    (found,) = device_obj.Device.list(ctx)
    assert device_db.swap_status(ctx, found.uuid, found.status,
                                 states.DEVICE_READY)
    return found
