"""The one Nova client: tells Nova that accelerator requests are bound."""

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg.clients import adapter as ksa_adapter

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: The compute API microversion that knows accelerator-request-bound.
MICROVERSION = '2.82'
EVENT = 'accelerator-request-bound'


def configured():
    """Whether [nova] names an auth plugin to reach Nova with."""
    return bool(CONF.nova.auth_type)


class NovaClient:
    """Sends server external events; never raises on Nova's behalf."""

    def __init__(self, adapter=None):
        self._adapter = adapter

    @property
    def adapter(self):
        if self._adapter is None:
            self._adapter = ksa_adapter.from_conf('nova')
        return self._adapter

    def bound(self, instance_uuid, results):
        """Send one event per ARQ of an instance.

        :param results: ARQ uuid -> True (Bound) or False (BindFailed).
        :returns: whether Nova took the events (an event Nova rejects for
            an instance it no longer knows, 422, counts as taken).
        """
        if self._adapter is None and not configured():
            LOG.info('Nova is not configured ([nova] auth_type); not '
                     'sending %s for instance %s', EVENT, instance_uuid)
            return False
        events = [{'name': EVENT, 'server_uuid': instance_uuid, 'tag': uuid,
                   'status': 'completed' if ok else 'failed'}
                  for uuid, ok in sorted(results.items())]
        try:
            response = self.adapter.post(
                '/os-server-external-events', json={'events': events},
                microversion=MICROVERSION, raise_exc=False)
        except ks_exc.ClientException as exc:
            LOG.warning('Could not send %s for instance %s: %s', EVENT,
                        instance_uuid, exc)
            return False
        # NOTE(nova): 207 when some events failed, 422 when all did (for
        # example the instance was deleted meanwhile): nothing to retry.
        if response.status_code in (200, 207, 422):
            LOG.info('Sent %d %s events for instance %s (HTTP %d)',
                     len(events), EVENT, instance_uuid, response.status_code)
            return True
        LOG.warning('Nova answered HTTP %d to %s for instance %s',
                    response.status_code, EVENT, instance_uuid)
        return False
