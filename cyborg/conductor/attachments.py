"""Attach and detach of /v1 accelerators: to an instance or to a host."""

from oslo_log import log as logging

from cyborg import exception
from cyborg import states
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.conductor import accelerators
from cyborg.conductor import binding
from cyborg.conductor import hostwork

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


def attach(context, uuid, agent_api, conductor, instance_uuid=None,
           host=None, project_id=None):
    """Attach an accelerator; returns its view once attached.

    To an instance: an ARQ is bound to it as Nova's binds are (host-side
    work, then Nova's ``accelerator-request-bound`` event). To a host: the
    agent has the driver prepare it for the host's own use. Either way the
    agent reserves it in Placement so the scheduler does not hand it out.

    :param conductor: the ConductorManager (finish_binds, tell_nova).
    :raises AttachFailed, AgentUnavailable and what ``start_attach``
        raises: the accelerator is then detached, as it was.
    """
    kind = accelerators.INSTANCE if instance_uuid else accelerators.HOST
    job = accelerators.start_attach(context, uuid, kind,
                                    instance_uuid or host, project_id)
    reserved = False
    try:
        if job['deployable'] is not None:
            _agent_call(job, lambda *a: agent_api.attach(context, *a),
                        kind == accelerators.HOST)
            reserved = True
        if kind == accelerators.INSTANCE:
            _bind(context, job, conductor)
    except exception.CyborgException as exc:
        _undo(context, job, agent_api, reserved)
        if isinstance(exc, exception.DriverError):
            raise exception.AttachFailed(uuid=uuid, reason=str(exc)) from exc
        raise
    accelerators.set_attach_state(context, uuid, accelerators.ATTACHING,
                                  accelerators.ATTACHED)
    LOG.info('Accelerator %s is attached to %s %s', uuid, kind,
             instance_uuid or host)
    return accelerators.get(context, uuid)


def _bind(context, job, conductor):
    arq, instance = job['arq_uuid'], job['target']
    if job['deployable'] is None:
        binding.bind_without_handle(context, arq, instance)
        conductor.tell_nova({arq: (instance, states.ARQ_BOUND)})
        return
    if binding.start_bind_on(context, arq, instance,
                             job['deployable']['uuid']):
        conductor.finish_binds(context, [arq])
    else:
        conductor.finish_binds(context, [], failed={arq: instance})
    state = binding.get(context, arq).state
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
                raise exception.AcceleratorAllocated(
                    uuid=uuid, consumers=', '.join(consumers))
        if job['kind'] is None:
            if job.get('instances'):
                raise exception.AcceleratorAttached(
                    uuid=uuid, target='instance %s by Nova; detach it '
                    'through Nova' % ', '.join(job['instances']))
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
            raise exception.DetachFailed(uuid=uuid, reason=str(exc)) from exc
        raise
    released = accelerators.clear_attachment(context, uuid)
    hostwork.release(context, released, agent_api)
    LOG.info('Accelerator %s is detached from %s %s', uuid, job['kind'],
             job['target'])


def _consumers(context, job, agent_api):
    dep = job['deployable']
    return agent_rpcapi.reached(dep['host'], agent_api.consumers, context,
                                dep['host'], dep['name'])
