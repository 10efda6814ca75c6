"""Adopting the ARQ work of conductors that stopped heartbeating."""

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import states
from cyborg.conductor import hostwork
from cyborg.db import ownership

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def _unowned_after():
    # NOTE(takeover): a bind that records no owner (started by an older
    # release) may still be running; its longest host work is programming.
    return (CONF.conductor.program_timeout +
            CONF.conductor.agent_rpc_timeout + CONF.conductor.takeover_after)


def adopt(context, conductor, binary, at_start=False):
    """Take, and finish, the binds and unbinds of dead conductors.

    :param conductor: this conductor's manager (``host``, ``agent_api``,
        ``finish_binds``).
    :param at_start: this conductor has just started: what a former
        process on its host held is abandoned too.
    :returns: the uuids of the ARQs this conductor took.
    """
    unowned_after = _unowned_after()
    found = ownership.orphaned(
        context, binary, CONF.conductor.takeover_after, unowned_after,
        mine=conductor.host if at_start else None)
    binds, unbinds = [], []
    for uuid, owner, state in found:
        if not ownership.take(context, uuid, owner, conductor.host,
                              unowned_after):
            # NOTE(takeover): another conductor got it first, or its
            # owner finished it meanwhile.
            continue
        LOG.warning('Took over the %s of ARQ %s from conductor %s, which '
                    'stopped', 'bind' if state == states.ARQ_BIND_STARTED
                    else 'unbind', uuid, owner or '(unknown)')
        if state == states.ARQ_BIND_STARTED:
            binds.append(uuid)
        else:
            unbinds.append(uuid)
    for uuid in unbinds:
        finish_unbind(context, [uuid], conductor)
    if binds:
        conductor.finish_binds(context, binds)
    return binds + unbinds


def finish_unbind(context, uuids, conductor, released=None):
    """Have the agents release the unbound ARQs' handles, then free them.

    :param released: the handles to release, when the caller has them.
    """
    if released is None:
        released = [handle for uuid in uuids for handle in
                    ownership.unbind_job(context, uuid, conductor.host)]
    hostwork.release(context, released, conductor.agent_api)
    ownership.finish_unbind(context, uuids, conductor.host)


def holds(context, job, host):
    """Whether conductor ``host`` holds the bind of ``job`` (a bind_job);
    one no conductor holds (an older release's) it takes."""
    if job['owner'] is None:
        return ownership.claim(context, job['uuid'], host)
    return job['owner'] == host
