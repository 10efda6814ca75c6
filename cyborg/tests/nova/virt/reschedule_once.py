"""Nova's fake virt driver, whose first spawn of a marked server fails."""

import os

from nova import conf as nova_conf
from nova import exception
from nova.virt import fake

CONF = nova_conf.CONF

#: a server whose name starts with this fails its first spawn.
PREFIX = 'reschedule-'


class RescheduleOnceDriver(fake.FakeDriverWithoutFakeNodes):
    """``fake.FakeDriverWithoutFakeNodes``, but the first spawn of a server
    named ``reschedule-...`` fails with ComputeResourcesUnavailable, which
    nova-compute answers by deleting the server's ARQs and asking
    nova-conductor to build it on an alternate host, as Nova's own
    ``fake.FakeRescheduleDriver`` does in one process.

    The computes of a test run on one machine and share ``[oslo_concurrency]
    lock_path``: a file there records the failed spawn, so that the compute
    the server is rescheduled to spawns it, whichever host came first.
    The tests copy it into the ``nova.virt`` package of Nova's
    virtualenv, the one place nova-compute loads a driver from
    (``[DEFAULT] compute_driver = reschedule_once.RescheduleOnceDriver``).
    """

    def spawn(self, context, instance, *args, **kwargs):
        if instance.display_name.startswith(PREFIX):
            os.makedirs(CONF.oslo_concurrency.lock_path, exist_ok=True)
            marker = os.path.join(CONF.oslo_concurrency.lock_path,
                                  'spawn-failed-%s' % instance.uuid)
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                raise exception.ComputeResourcesUnavailable(
                    reason='the first spawn of %s fails (test driver)'
                    % instance.display_name)
        return super().spawn(context, instance, *args, **kwargs)
