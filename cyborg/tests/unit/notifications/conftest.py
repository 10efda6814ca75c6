"""Fixtures of the notification tests: oslo.messaging's test driver."""

from oslo_config import cfg
from oslo_messaging.notify import _impl_test
import pytest

from cyborg import rpc
from cyborg.notifications import base
from cyborg.tests.unit.api.conftest import api  # noqa: F401 - NOTE(tests)

CONF = cfg.CONF


class Recorded:
    """What oslo.messaging's ``test`` notification driver received."""

    def __call__(self, event_type=None):
        """Every notification sent so far (after the sender's queue is
        empty) as a consumer reads it, of ``event_type`` when given."""
        assert base.flush(10), 'notifications still queued'
        found = [dict(message, context=ctxt)
                 for ctxt, message, _priority, _retry
                 in _impl_test.NOTIFICATIONS]
        if event_type is not None:
            found = [n for n in found if n['event_type'] == event_type]
        return found

    def types(self):
        return [n['event_type'] for n in self()]


def start_test_driver(override):
    """Send through the ``test`` driver from now on."""
    if rpc.notification_transport() is None:
        override('transport_url', 'fake:/')
        rpc.init(CONF)
    override('driver', ['test'], group='oslo_messaging_notifications')
    base.flush(10)
    _impl_test.reset()


@pytest.fixture
def notes(override):
    """Notifications on (``test`` driver, fake transport); the value lists
    those sent (see ``Recorded``)."""
    rpc.cleanup()
    start_test_driver(override)
    yield Recorded()
    base.flush(10)
    _impl_test.reset()
    rpc.cleanup()


@pytest.fixture
def stack_notes(stack, override):
    """``notes`` for tests on the unit tests' stack (a conductor and its
    agents over the fake transport), whose transport it keeps."""
    start_test_driver(override)
    yield Recorded()
    base.flush(10)
    _impl_test.reset()
