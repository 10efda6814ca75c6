"""Scrubbing deployables between tenants, through their hosts' agents."""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import exception
from cyborg.conductor import claims
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.db import api as dbapi
from cyborg.db import scrubs
from cyborg.notifications import maintenance as notifications

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def stale_after():
    """Seconds after which a conductor's scrub counts as abandoned: the
    agent's call is bounded by ``agent_rpc_timeout``."""
    return CONF.conductor.agent_rpc_timeout + CONF.conductor.takeover_after


def run(context, host, agent_api):
    """Claim the scrubs no live conductor runs and run them; how many."""
    jobs = scrubs.claim(context, host, stale_after())
    for job in jobs:
        _claimed(context, job, agent_api, host)
    return len(jobs)


def _claimed(context, job, agent_api, host):
    """Scrub under the claim of the job's device, which every other
    host-side workflow takes too; a device another holds is scrubbed by
    a later pass."""
    # NOTE(scrub): the job (cleaning_since, scrub_owner) is the queue of
    # what must be scrubbed, kept until done; the device claim is what
    # keeps a programming, a driver update or a mode switch off the
    # device while the agent scrubs.
    try:
        with claims.held(context, job['device_uuid'], claims.SCRUB, host):
            _scrub(context, job, agent_api)
    except exception.DeviceClaimed as exc:
        # NOTE(scrub): only the claim raises it; _scrub raises nothing.
        scrubs.put_back(context, job)
        LOG.info('Scrub of %s waits for the next pass: %s', job['name'],
                 exception.message_of(exc))


def _tell(context, job, agent_api):
    lifecycle.tell_agent(context, dbapi.devices.get(context,
                                                    job['device_uuid']),
                         agent_api)


def _scrub(context, job, agent_api):
    # NOTE(scrub): binds have refused the deployable since it was marked;
    # Placement must stop offering it before the agent starts.
    _tell(context, job, agent_api)
    notifications.scrub_started(context, job)
    try:
        done = agent_api.scrub_deployable(
            context, job['host'], job['driver_name'], job['cpid_type'],
            job['cpid_info'], job['name'])
    except exception.RPCVersionCapped as exc:
        LOG.warning('Deployable %s was not scrubbed: %s', job['name'], exc)
        done = {'scrubbed': False}
    except (exception.AgentUnavailable, messaging.MessagingException) as exc:
        # NOTE(scrub): it stays cleaning, and reserved; a conductor takes
        # the job again once it is stale.
        LOG.warning('The agent of %s did not scrub %s (%s); it is tried '
                    'again in %d seconds', job['host'], job['name'],
                    type(exc).__name__, stale_after())
        return
    except exception.CyborgException as exc:
        change = scrubs.fail(context, job, exception.message_of(exc))
        if change is not None:
            LOG.error('Scrub of %s failed: %s; device %s is %s until an '
                      'operator enables it', job['name'],
                      exception.message_of(exc),
                      job['device_uuid'], change.status)
            _tell(context, job, agent_api)
            notifications.scrub_failed(context, job,
                                       exception.message_of(exc))
            inventory.notify_change(context, change)
        return
    if not scrubs.finish(context, job):
        return
    steps = list(done.get('steps') or ())
    if done.get('scrubbed'):
        LOG.info('Scrubbed %s for its next tenant%s', job['name'],
                 ' (%s)' % ', '.join(steps) if steps else '')
    _tell(context, job, agent_api)
    notifications.scrub_ended(context, job, steps)
