"""ARQ workflows: bind (host-side work, then Nova's event), unbind, delete.
"""

from oslo_log import log as logging

from cyborg import exception
from cyborg import states
from cyborg.conductor import hostwork
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor import takeover
from cyborg.conductor.bind import store as arq_store
from cyborg.notifications import arq as arq_notifications
from cyborg.notifications import base as notifications

LOG = logging.getLogger(__name__)


def list_arqs(context, project_id=None, instance_uuid=None, resolved=False,
              paging=None):
    """ARQs as ``ConductorAPI.list_arqs`` answers them.

    :raises ARQsUnresolved: ``resolved`` and some of the instance's ARQs
        are still binding.
    """
    if resolved and instance_uuid is None:
        # NOTE(conductor): without an instance there is nothing to wait
        # for: the resolved ARQs are listed, the others left out.
        return arq_store.list_arqs(context, project_id, resolved=True,
                                   **(paging or {}))
    if resolved:
        waiting = arq_store.unresolved(context, instance_uuid, project_id)
        if waiting:
            raise exception.ARQsUnresolved(instance=instance_uuid,
                                           uuids=', '.join(waiting))
    return arq_store.list_arqs(context, project_id, instance_uuid,
                               **(paging or {}))


def start(context, bindings, project_id, host):
    """Start the binds; this conductor (``host``) finishes them from a
    cast to itself. Returns the uuids now BindStarted."""
    started, failed = arq_store.start_bind(context, bindings, project_id,
                                           owner=host)
    arq_notifications.bind_started(context, lambda: arqs(context, started))
    arq_notifications.bind_ended(context, lambda: arqs(context, failed),
                                 ok=False)
    if started or failed:
        # NOTE(conductor): the API answers 202 at once; Nova hears of
        # failed binds too from the cast, never while it waits. The
        # cast comes back here: this conductor holds the binds.
        conductor_rpcapi.ConductorAPI().finish_binds(
            context, started, failed={
                uuid: bindings[uuid]['instance_uuid'] for uuid in failed},
            server=host)
    return started


def finish(context, uuids, failed, host, agent_api, nova):
    """Host-side work of each bind, then Bound, then Nova's event.

    :param failed: ARQ uuid -> instance of binds that already failed
        (no free handle): Nova only needs to hear of them.
    """
    failed = failed or {}
    # NOTE(conductor): held until Nova has the events, or the periodic
    # resume of a bind that outlived takeover_after (a database outage)
    # would send them at the same time.
    with takeover.holding(host, list(uuids) + list(failed)) as mine:
        results = {uuid: (failed[uuid], states.ARQ_BIND_FAILED)
                   for uuid in mine if uuid in failed}
        _work(context, [uuid for uuid in mine if uuid not in failed],
              host, agent_api, results)
        # NOTE(conductor): only once Nova has the events may the ARQs go;
        # had this conductor died before, its successor would have sent
        # them. Those Nova did not take are sent again (takeover.resume).
        takeover.send_events(context, list(results), host,
                             lambda held: tell_nova(nova, held))


def _work(context, uuids, host, agent_api, results):
    for uuid in uuids:
        job = arq_store.bind_job(context, uuid)
        if job is None or not takeover.holds(context, job, host):
            continue
        ok = hostwork.bind(context, job, agent_api, owner=host)
        done = arq_store.finish_bind(context, uuid, ok=ok, owner=host)
        if done == arq_store.LOST:
            # NOTE(conductor): another conductor took the bind over
            # (this one looked dead); the handle is its now.
            LOG.warning('Conductor %s lost the bind of ARQ %s to '
                        'another conductor', host, uuid)
        elif done is None and ok:
            # NOTE(conductor): unbound or deleted while the agent
            # worked: undo what it prepared.
            hostwork.release(context, job['prepared'], agent_api)
        elif done is not None:
            results[uuid] = done
            arq_notifications.bind_ended(
                context, lambda uuid=uuid: arqs(context, [uuid]),
                ok=done[1] == states.ARQ_BOUND)


def tell_nova(nova, results):
    """One event batch per instance; ``results``: uuid -> (instance,
    state). Returns the uuids whose events are done with: Nova took them,
    or no Nova is configured to take them."""
    by_instance = {}
    for uuid, (instance, state) in results.items():
        by_instance.setdefault(instance, {})[uuid] = (
            state == states.ARQ_BOUND)
    heard = []
    for instance, outcome in by_instance.items():
        if nova.bound(instance, outcome) or not nova.enabled:
            heard.extend(outcome)
    return heard


def delete(context, uuids, instance_uuid, project_id, bound_ok, agent_api):
    """Delete ARQs and have the agents release their prepared handles;
    returns how many were deleted."""
    gone = notifications.collect(
        lambda: arqs(context, uuids, project_id) if uuids is not None else
        arq_store.list_arqs(context, project_id, instance_uuid))
    count, released = arq_store.delete(context, uuids, instance_uuid,
                                       project_id, bound_ok)
    arq_notifications.deleted(context, gone)
    hostwork.release(context, released, agent_api)
    return count


def arqs(context, uuids, project_id=None):
    """The ARQs of ``uuids``, for their notifications."""
    return [arq_store.get(context, uuid, project_id) for uuid in uuids]
