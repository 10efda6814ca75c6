"""The one Nova client: bound events, and who owns a server."""

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.clients import adapter as ksa_adapter

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: The compute API microversion that knows accelerator-request-bound.
MICROVERSION = '2.82'
EVENT = 'accelerator-request-bound'
#: The compute API microversion of a server's show: its body has tenant_id
#: in every microversion, so the oldest one does.
SHOW_MICROVERSION = '2.1'


def configured():
    """Whether [nova] names an auth plugin to reach Nova with."""
    return bool(CONF.nova.auth_type)


class NovaClient:
    """Sends server external events (never raising on Nova's behalf) and
    asks which project owns a server."""

    def __init__(self, adapter=None):
        self._adapter = adapter

    @property
    def adapter(self):
        if self._adapter is None:
            self._adapter = ksa_adapter.from_conf('nova')
        return self._adapter

    @property
    def enabled(self):
        """Whether there is a Nova to ask: one given, or [nova] set."""
        return self._adapter is not None or configured()

    def server_project(self, instance_uuid):
        """The project (``tenant_id``) of a server, as Cyborg's [nova]
        credentials see it.

        :returns: the project id, or None when Nova has no such server.
        :raises NovaUnavailable: Nova did not answer, answered anything
            but 200 or 404, or answered a body without ``tenant_id``.
        """
        try:
            response = self.adapter.get(
                '/servers/%s' % instance_uuid,
                microversion=SHOW_MICROVERSION, raise_exc=False)
        except ks_exc.ClientException as exc:
            LOG.warning('Could not ask Nova for instance %s: %s',
                        instance_uuid, exc)
            raise exception.NovaUnavailable(
                reason=type(exc).__name__) from exc
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            # NOTE(nova): 401 or 403 say that [nova]'s credentials are
            # wrong, 5xx that Nova is unwell: either way nobody can tell
            # who owns the instance now.
            LOG.warning('Nova answered HTTP %d to GET /servers/%s',
                        response.status_code, instance_uuid)
            raise exception.NovaUnavailable(
                reason='it answered HTTP %d' % response.status_code)
        try:
            project = response.json()['server']['tenant_id']
        except (ValueError, KeyError, TypeError) as exc:
            LOG.warning('Nova answered GET /servers/%s without the '
                        'server\'s tenant_id', instance_uuid)
            raise exception.NovaUnavailable(
                reason='its answer names no tenant_id') from exc
        if not isinstance(project, str) or not project:
            raise exception.NovaUnavailable(
                reason='its answer names no tenant_id')
        return project

    def bound(self, instance_uuid, results):
        """Send one event per ARQ of an instance.

        :param results: ARQ uuid -> True (Bound) or False (BindFailed).
        :returns: whether Nova took the events (an event Nova rejects for
            an instance it no longer knows, 422, counts as taken).
        """
        if not self.enabled:
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
