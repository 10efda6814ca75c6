"""Accelerator requests: creation from profiles, bind, unbind and delete.

The transactions live in ``cyborg.db.arqs``; this module turns what they
return into ``AcceleratorRequest`` objects as clients see them.
"""

import json

from oslo_db import exception as db_exc
from oslo_log import log as logging

from cyborg import deadline
from cyborg import states
from cyborg.conductor import quota
from cyborg.db import arq_moves
from cyborg.db import arqs as arq_db
from cyborg.db import bind_work
from cyborg.db import quota_usage
from cyborg.notifications import arq as arq_notifications
from cyborg.objects import arq as arq_obj

LOG = logging.getLogger(__name__)

# NOTE(binding): what clients read of a handle; Nova builds the PCI address
# of the device it attaches from these keys (an mdev's uuid is the handle's).
_HANDLE_KEYS = ('domain', 'bus', 'device', 'function', 'physical_network',
                'asked_type', 'vgpu_mark')

#: What ``finish_bind`` answers a conductor whose bind another conductor
#: took over (and may have finished): it must leave the handle alone.
LOST = arq_db.LOST

units = arq_db.units
create_for_attach = arq_db.create_for_attach
unresolved = arq_db.unresolved
start_bind_on = arq_db.start_bind_on
bind_without_handle = arq_db.bind_without_handle
finish_bind = arq_db.finish_bind
bind_job = bind_work.bind_job
others = bind_work.others
stuck = bind_work.stuck
unbind = arq_db.unbind
delete = arq_db.delete


def _to_object(context, values):
    obj = arq_obj.AcceleratorRequest(context)
    for name in ('id', 'uuid', 'state', 'device_profile_group_id',
                 'hostname', 'device_rp_uuid', 'instance_uuid', 'project_id',
                 'created_at', 'updated_at'):
        setattr(obj, name, values[name])
    # NOTE(binding): the ARQ of a /v1 attach has no profile; clients
    # expect a string here.
    obj.device_profile_name = values['device_profile_name'] or ''
    handle = values['handle']
    bound = handle is not None and values['state'] == states.ARQ_BOUND
    # NOTE(binding): as upstream, handle details show once bound only.
    obj.attach_handle_type = handle['type'] if bound else ''
    obj.attach_handle_uuid = handle['uuid'] if bound else None
    info = json.loads(handle['info']) if bound else {}
    obj.attach_handle_info = {k: str(v) for k, v in info.items()
                              if k in _HANDLE_KEYS}
    obj.obj_reset_changes()
    return obj


#: An ARQ's dict (``cyborg.db.arqs._values``) as clients see it.
to_object = _to_object


def create(context, profile_name, project_id, key=None):
    """One ARQ per unit of each group of the named profile, all or none.

    :param key: the caller's uuid for this create: sent again with it, the
        create answers the ARQs its first run made.
    :raises DeviceProfileNotFound: no profile has that name.
    :raises QuotaExceeded: the project would go over a limit; nothing is
        left written.
    :raises DeadlineExceeded: the caller stopped waiting (the API answered
        503); nothing is left written.
    """
    if key is not None:
        made = _made_before(context, profile_name, project_id, key)
        if made:
            return made
    demand = quota_usage.profile_demand(context, profile_name)
    quota.check(context, project_id, demand)
    try:
        created = arq_db.create(context, profile_name, project_id, key)
    except db_exc.DBDuplicateEntry:
        # NOTE(binding): the same create, sent again, committed first on
        # another conductor.
        made = key and _made_before(context, profile_name, project_id, key)
        if not made:
            raise
        return made

    def undo():
        arq_db.delete(context, uuids=[values['uuid'] for values in created])
    quota.recheck(context, project_id, demand, undo)
    if deadline.passed(context):
        # NOTE(deadline): the recheck (Keystone's limits, with unified
        # limits) took the caller's last seconds after the commit.
        undo()
        raise deadline.dropped('Creating %d accelerator requests'
                               % len(created), context.request_id,
                               deadline.late_by(context))
    LOG.info('Created %d accelerator requests from device profile %s',
             len(created), profile_name)
    arqs = [_to_object(context, values) for values in created]
    arq_notifications.created(context, arqs)
    return arqs


def start_bind(context, bindings, project_id=None, owner=None):
    """Check every binding, then move each ARQ to BindStarted with a handle
    (``cyborg.db.arqs.start_bind``); a binding whose /project_id moves its
    ARQ to another project must fit that project's quota.

    :returns: uuids now BindStarted, and uuids already BindFailed.
    :raises QuotaExceeded: a receiving project would go over a limit;
        nothing is left written.
    :raises ARQNotFound, ARQBadState, Invalid: nothing is changed.
    """
    started, failed, demands, before = arq_moves.start_bind(
        context, bindings, quota.check, project_id, owner)
    for project, demand in sorted(demands.items()):
        quota.recheck(context, project, demand,
                      lambda: arq_moves.give_back(context, before))
    return started, failed


def _made_before(context, profile_name, project_id, key):
    made = arq_db.made_by(context, profile_name, project_id, key)
    if made:
        # NOTE(binding): the API sent the create again (its first conductor
        # said nothing for [api] rpc_call_monitor_timeout); the first run
        # committed: its ARQs are the answer, created and counted once.
        LOG.info('Create %s was sent again; answering the %d accelerator '
                 'requests its first run made', key, len(made))
    return [_to_object(context, values) for values in made]


def get(context, uuid, project_id=None):
    """One ARQ; another project's is reported missing, not forbidden."""
    return _to_object(context, arq_db.get(context, uuid, project_id))


def list_arqs(context, project_id=None, instance_uuid=None, limit=None,
              marker=None, sort_key='id', sort_dir='asc', resolved=False):
    """ARQs, of one project unless ``project_id`` is None (admins).

    :param marker: uuid of the last ARQ of the previous page.
    :param resolved: only those whose binding is settled (ARQ_RESOLVED).
    :raises InvalidParameterValue: no ARQ (visible here) has that uuid.
    """
    return [_to_object(context, values) for values in arq_db.list_arqs(
        context, project_id=project_id, instance_uuid=instance_uuid,
        limit=limit, marker=marker, sort_key=sort_key, sort_dir=sort_dir,
        resolved=resolved)]
