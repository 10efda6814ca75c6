"""Fixtures of the API tests: an app on noauth over the SQLite database."""

from oslo_utils import uuidutils
import pytest
import webtest

from cyborg import policy
from cyborg.api import app as api_app
from cyborg.objects import attribute as attribute_obj
from cyborg.objects import deployable as deployable_obj
from cyborg.objects import device as device_obj
from cyborg.tests import faults

ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'p-admin',
         'X-User-Id': 'u-admin'}
READER = {'X-Roles': 'reader', 'X-Project-Id': 'p-reader',
          'X-User-Id': 'u-reader'}
WITH_CODES = faults.WITH_CODES


def version_header(value):
    return {'OpenStack-API-Version': value}


def fault(response):
    """The WSME fault inside an error envelope (checks the envelope too)."""
    assert response.content_type == 'application/json'
    return faults.fault_of(response.json)


def code(response):
    """The code of an error response; the request asked for 2.12 or later
    (``WITH_CODES``)."""
    return fault(response)['code']


@pytest.fixture
def api(db, override):
    """A webtest app on ``auth_strategy = noauth`` with an empty database.

    ``db`` (cyborg/tests/conftest.py) is the SQLite database the objects
    are bound to, as in the conductor; nothing here goes over RPC.
    """
    override('auth_strategy', 'noauth', group='api')
    policy.reset()
    yield webtest.TestApp(api_app.setup_app())
    policy.reset()


@pytest.fixture
def make_device(ctx):
    def _make(**values):
        values.setdefault('uuid', uuidutils.generate_uuid())
        values.setdefault('type', 'FPGA')
        values.setdefault('vendor', '0xABCD')
        values.setdefault('model', 'miss model info')
        values.setdefault('std_board_info',
                          '{"device_id": "0xabcd", "class": "Fake class"}')
        values.setdefault('vendor_board_info', 'fake_vendor_info')
        values.setdefault('hostname', 'computenode')
        values.setdefault('status', 'inactive')
        device = device_obj.Device(ctx, **values)
        device.create()
        return device
    return _make


@pytest.fixture
def make_deployable(ctx, make_device):
    def _make(device=None, attributes=(), **values):
        device = device or make_device()
        values.setdefault('uuid', uuidutils.generate_uuid())
        values.setdefault('name', 'computenode_FakeDevice')
        values.setdefault('num_accelerators', 16)
        values.setdefault('driver_name', 'fake')
        deployable = deployable_obj.Deployable(ctx, device_id=device.id,
                                               **values)
        deployable.create()
        for key, value in attributes:
            attribute_obj.Attribute(ctx, deployable_id=deployable.id,
                                    key=key, value=value).create()
        return deployable_obj.Deployable.get(ctx, deployable.uuid)
    return _make
