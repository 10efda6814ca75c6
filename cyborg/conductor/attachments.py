"""Attach and detach of /v1 accelerators: to an instance or to a host."""

from oslo_log import log as logging

from cyborg import exception
from cyborg import states
from cyborg.conductor import accelerators
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import hostwork
from cyborg.conductor import quota
from cyborg.conductor.bind import store as arq_store
from cyborg.db import quota_usage
from cyborg.notifications import arq as arq_notifications

LOG = logging.getLogger(__name__)


def _agent_call(job, call, *args):
    """Call the agent of the job's deployable about it."""
    dep = job['deployable']
    return agent_rpcapi.reached(
        dep['host'], call, dep['host'], job['uuid'], dep['driver_name'],
        dep['cpid'][0], dep['cpid'][1], dep['name'], *args)


def _undo(context, job, agent_api, reserved):
    if reserved:
        try:
            _agent_call(job, lambda *a: agent_api.detach(context, *a),
                        False)
        except exception.CyborgException as exc:
            LOG.warning('Could not free accelerator %s in Placement after a '
                        'failed attach (%s); the agent frees it at its next '
                        'heal', job['uuid'], exc)
    released = accelerators.clear_attachment(context, job['uuid'])
    hostwork.release(context, released, agent_api)


def check_owner(context, instance_uuid, nova):
    """Refuse an instance that Nova does not show in the caller's project.

    An administrator's attach is not checked; without Nova it cannot be,
    and is let through as before, with a log line.

    :param nova: the conductor's cyborg.clients.nova.NovaClient.
    :raises InstanceNotInProject: Nova has no such instance or another
        project owns it (one answer for both).
    :raises NovaUnavailable: Nova could not say.
    """
    if context.is_admin:
        return
    if not nova.enabled:
        LOG.info('Not checking that instance %s belongs to project %s: Nova '
                 'is not configured ([nova] auth_type is not set)',
                 instance_uuid, context.project_id)
        return
    owner = nova.server_project(instance_uuid)
    if owner is None or owner != context.project_id:
        LOG.info('Refusing to attach to instance %s for project %s: Nova '
                 '%s', instance_uuid, context.project_id,
                 'has no such instance' if owner is None else
                 'shows it in project %s' % owner)
        raise exception.InstanceNotInProject(instance=instance_uuid,
                                             project=context.project_id)


def _allocated(context, uuid, consumers):
    """The conflict of Placement allocations on an accelerator; consumers
    (instances) not known to be the caller's project's are not named."""
    if not context.is_admin:
        projects = accelerators.instance_projects(context, consumers)
        if not all(accelerators.may_name(context, projects.get(consumer))
                   for consumer in consumers):
            return exception.AcceleratorAllocatedElsewhere(uuid=uuid)
    return exception.AcceleratorAllocated(uuid=uuid,
                                          consumers=', '.join(consumers))


def attach(context, uuid, agent_api, conductor, instance_uuid=None,
           host=None, project_id=None):
    """Attach an accelerator; returns its view once attached.

    To an instance: an ARQ is bound to it as Nova's binds are (host-side
    work, then Nova's ``accelerator-request-bound`` event). To a host: the
    agent has the driver prepare it for the host's own use. Either way the
    agent reserves it in Placement so the scheduler does not hand it out.

    :param conductor: the ConductorManager (finish_binds, tell_nova,
        nova).
    :raises InstanceNotInProject, NovaUnavailable: see ``check_owner``;
        nothing was written.
    :raises QuotaExceeded: the project would go over a limit with all of
        the deployable's units (an attach takes it whole); nothing is left
        written.
    :raises AttachFailed, AgentUnavailable and what ``start_attach``
        raises: the accelerator is then detached, as it was.
    """
    kind = accelerators.INSTANCE if instance_uuid else accelerators.HOST
    if kind == accelerators.INSTANCE:
        # NOTE(attachments): before anything is written, so that a refused
        # attach leaves nothing to undo.
        check_owner(context, instance_uuid, conductor.nova)
        demand = quota_usage.attach_demand(context, uuid)
        quota.check(context, project_id, demand)
    job = accelerators.start_attach(context, uuid, kind,
                                    instance_uuid or host, project_id)
    reserved = False
    try:
        if job['deployable'] is not None:
            _agent_call(job, lambda *a: agent_api.attach(context, *a),
                        kind == accelerators.HOST)
            reserved = True
        if kind == accelerators.INSTANCE:
            _bind(context, job, conductor, lambda: quota.recheck(
                context, project_id, demand, lambda: None))
    except exception.CyborgException as exc:
        _undo(context, job, agent_api, reserved)
        if isinstance(exc, exception.DriverError):
            raise exception.AttachFailed(
                uuid=uuid, reason=exception.message_of(exc)) from exc
        if isinstance(exc, exception.AcceleratorAllocated):
            # NOTE(attachments): the agent names every consumer; the
            # caller hears only of its own project's.
            consumers = exc.kwargs.get('consumers') or ''
            raise _allocated(context, uuid, [
                name.strip() for name in consumers.split(',')
                if name.strip()]) from exc
        raise
    accelerators.set_attach_state(context, uuid, accelerators.ATTACHING,
                                  accelerators.ATTACHED)
    LOG.info('Accelerator %s is attached to %s %s', uuid, kind,
             instance_uuid or host)
    return accelerators.get(context, uuid)


def _bind(context, job, conductor, recheck):
    """Bind the attach's ARQ; ``recheck()`` runs once it holds the
    deployable, before Nova hears of it (its QuotaExceeded has ``attach``
    undo everything)."""
    arq, instance = job['arq_uuid'], job['target']
    if job['deployable'] is None:
        arq_store.bind_without_handle(context, arq, instance)
        conductor.tell_nova({arq: (instance, states.ARQ_BOUND)})
        return
    if arq_store.start_bind_on(context, arq, instance,
                               job['deployable']['uuid'],
                               owner=conductor.host):
        recheck()
        arq_notifications.bind_started(
            context, lambda: [arq_store.get(context, arq)])
        conductor.finish_binds(context, [arq])
    else:
        arq_notifications.bind_ended(
            context, lambda: [arq_store.get(context, arq)], ok=False)
        conductor.finish_binds(context, [], failed={arq: instance})
    state = arq_store.get(context, arq).state
    if state != states.ARQ_BOUND:
        raise exception.AttachFailed(
            uuid=job['uuid'],
            reason='its accelerator request %s is %s (no free attach handle, '
                   'or the host-side work failed: see the conductor log)'
                   % (arq, state))


def detach(context, uuid, agent_api):
    """Detach an accelerator attached through /v1.

    :raises AcceleratorAllocated: Placement holds allocations on it (an
        instance Nova scheduled there uses it); nothing changes.
    :raises AcceleratorNotAttached, AcceleratorBusy, AgentUnavailable,
        DetachFailed.
    """
    job = accelerators.start_detach(context, uuid)
    try:
        if job['deployable'] is not None:
            consumers = _consumers(context, job, agent_api)
            if consumers:
                raise _allocated(context, uuid, consumers)
        if job['kind'] is None:
            instances = job.get('instances')
            if instances and all(accelerators.may_name(context, project)
                                 for _instance, project in instances):
                raise exception.AcceleratorAttached(
                    uuid=uuid, target='instance %s by Nova; detach it '
                    'through Nova' % ', '.join(dict.fromkeys(
                        instance for instance, _project in instances)))
            if instances:
                raise exception.AcceleratorAttachedElsewhere(uuid=uuid)
            raise exception.AcceleratorNotAttached(uuid=uuid)
        if job['deployable'] is not None:
            _agent_call(job, lambda *a: agent_api.detach(context, *a),
                        job['kind'] == accelerators.HOST)
    except exception.CyborgException as exc:
        if job['kind'] is not None:
            accelerators.set_attach_state(context, uuid,
                                          accelerators.DETACHING,
                                          accelerators.ATTACHED)
        if isinstance(exc, exception.DriverError):
            raise exception.DetachFailed(
                uuid=uuid, reason=exception.message_of(exc)) from exc
        raise
    released = accelerators.clear_attachment(context, uuid)
    hostwork.release(context, released, agent_api)
    LOG.info('Accelerator %s is detached from %s %s', uuid, job['kind'],
             job['target'])


def _consumers(context, job, agent_api):
    dep = job['deployable']
    return agent_rpcapi.reached(dep['host'], agent_api.consumers, context,
                                dep['host'], dep['name'])
