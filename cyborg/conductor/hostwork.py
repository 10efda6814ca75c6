"""Host-side work through the agents: programming, and handles at bind."""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import exception
from cyborg import states
from cyborg.clients import glance as glance_client
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import claims
from cyborg.conductor.bind import store as arq_store
from cyborg.db import deployables as deployable_db
from cyborg.notifications import program as program_notifications

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BITSTREAM_ID = 'accel:bitstream_id'
FUNCTION_ID = 'accel:function_id'


def wanted_image(group, glance):
    """The Glance image id a profile group asks to program, or None.

    :raises Invalid: the group names both a bitstream and a function.
    :raises ImageNotFound, ImageUnavailable:
    """
    bitstream, function = group.get(BITSTREAM_ID), group.get(FUNCTION_ID)
    if bitstream and function:
        raise exception.Invalid(reason='a group names %s or %s, not both'
                                % (BITSTREAM_ID, FUNCTION_ID))
    if bitstream:
        return glance.image(bitstream)['id']
    if function:
        return glance.image_for_function(function)['id']
    return None


_target = deployable_db.program_target


def _program(context, target, image_id, agent_api, arq_uuid=None):
    program_notifications.started(context, target, image_id, arq_uuid)
    try:
        agent_rpcapi.reached(
            target['host'], agent_api.program, context, target['host'],
            target['driver_name'], target['cpid'][0], target['cpid'][1],
            target['name'], image_id)
    except (exception.DriverError, exception.ImageNotFound,
            exception.ImageNotUsable, exception.ImageUnavailable) as exc:
        program_notifications.failed(context, target, image_id, exc,
                                     arq_uuid)
        raise exception.ProgrammingFailed(
            uuid=target['uuid'], image=image_id,
            reason=exception.message_of(exc)) from exc
    except exception.CyborgException as exc:
        program_notifications.failed(context, target, image_id, exc,
                                     arq_uuid)
        raise
    deployable_db.set_bitstream(context, target['uuid'], image_id)
    program_notifications.ended(context, target, image_id, arq_uuid)
    LOG.info('Deployable %s now holds image %s', target['uuid'], image_id)


def resolve_image(image_id, glance=None):
    """The id of an active Glance image given by id.

    :raises ImageNotFound, ImageNotUsable, ImageUnavailable.
    """
    glance = glance or glance_client.GlanceClient()
    return glance.image(image_id)['id']


def program(context, deployable_uuid, image_id, agent_api, glance=None,
            owner=None):
    """Program a deployable no instance uses (the operator's PATCH), its
    device claimed by conductor ``owner`` meanwhile.

    :raises DeployableNotFound, DeployableInUse, ImageNotFound,
        ImageUnavailable, AgentUnavailable, ProgrammingFailed,
        DriverOperationNotSupported: the database is unchanged.
    :raises DeviceClaimed: another workflow holds the device.
    """
    image_id = resolve_image(image_id, glance)
    device_uuid = _target(context, deployable_uuid)['device_uuid']
    with claims.held(context, device_uuid, claims.PROGRAM, owner):
        target = _target(context, deployable_uuid)
        if target['in_use']:
            raise exception.DeployableInUse(uuid=deployable_uuid,
                                            count=target['in_use'])
        _program(context, target, image_id, agent_api)


def bind(context, job, agent_api, glance=None, owner=None):
    """Program the deployable if the group asks, then prepare the handle.

    :param job: what ``arq_store.bind_job`` returned.
    :param owner: the conductor running the bind (its device's claim is
        made in that name while it is programmed).
    :returns: whether the ARQ can be Bound (failures are logged).
    """
    dep, handle = job['deployable'], job['handle']
    try:
        if BITSTREAM_ID in job['group'] or FUNCTION_ID in job['group']:
            image_id = wanted_image(job['group'],
                                    glance or glance_client.GlanceClient())
            device_uuid = _target(context, dep['uuid'])['device_uuid']
            # NOTE(hostwork): ARQs of one instance on one deployable load
            # the image once; the others wait for the claim (as long as
            # a programming may take) and find the image there.
            with claims.held(context, device_uuid, claims.PROGRAM, owner,
                             wait=CONF.conductor.program_timeout):
                current = _target(context, dep['uuid'])
                if image_id != current['bitstream_id']:
                    others = arq_store.others(context, job['uuid'])
                    if others:
                        raise exception.DeployableInUse(
                            uuid=dep['uuid'], count=others)
                    _program(context, current, image_id, agent_api,
                             arq_uuid=job['uuid'])
        if handle['type'] in states.PREPARED_HANDLE_TYPES:
            agent_api.prepare_handle(context, job['host'], job['driver_name'],
                                     handle['type'], handle['info'],
                                     handle['uuid'], arq_uuid=job['uuid'])
    except (exception.CyborgException, messaging.MessagingException) as exc:
        # NOTE(hostwork): the reason alone; an agent's failure would bring
        # the agent's traceback along in its text.
        LOG.warning('Bind of ARQ %s failed on %s: %s', job['uuid'],
                    job['host'], exception.message_of(exc))
        return False
    except Exception as exc:  # noqa: BLE001 - the ARQ must not stay BindStarted
        # NOTE(hostwork): the reason on the first line too, as above, so
        # that one search finds every failed bind and why.
        LOG.exception('Bind of ARQ %s failed on %s: %s', job['uuid'],
                      job['host'], exception.message_of(exc))
        return False
    return True


def release(context, handles, agent_api):
    """Have the agents undo prepared handles (best effort, logged)."""
    for handle in handles:
        try:
            # NOTE(hostwork): the agent leaves alone a handle another ARQ
            # holds now (a late release after the handle was rebound).
            agent_api.release_handle(context, handle['host'],
                                     handle['driver_name'], handle['type'],
                                     handle['info'], handle['uuid'],
                                     arq_uuid=handle.get('arq'))
        except (exception.CyborgException,
                messaging.MessagingException) as exc:
            LOG.warning('The agent of %s did not release handle %s (%s); '
                        'its mdev may remain until the host removes it',
                        handle['host'], handle['uuid'], exc)
