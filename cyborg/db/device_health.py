"""A device's health as its agent reports it: holds, flaps and recovery."""

import collections
import datetime
import json

from oslo_config import cfg
import sqlalchemy as sa

from cyborg import states
from cyborg.db import clock
from cyborg.db import models
from cyborg.db import session
from cyborg.db.session import main

CONF = cfg.CONF

#: Statuses a device held by its health may have had; an activation the
#: hold interrupted starts over from inactive.
_RESUMES = {states.DEVICE_ACTIVATING: states.DEVICE_INACTIVE}
_HOLDS = (states.UNHEALTHY, states.FLAPPING, states.SCRUB_FAILED)
#: Holds the health loop never ends: an operator's enable does.
_OPERATOR_ONLY = (states.FLAPPING, states.SCRUB_FAILED)
#: Healths a held device comes back from.
_RECOVERED = (states.HEALTH_OK, states.HEALTH_DEGRADED)

#: What one report changed of a device's health and status.
Change = collections.namedtuple(
    'Change', 'uuid hostname old_health health reason old_status status')


def reported(device):
    """(health, reason, sources) of a ``report.Device``; agents older than
    health states say only ``fault`` (failed) or nothing (unknown)."""
    health = getattr(device, 'health', None)
    reason = getattr(device, 'health_reason', None)
    sources = sorted(getattr(device, 'health_sources', None) or ())
    if device.fault:
        return states.HEALTH_FAILED, reason or device.fault, sources
    if health not in states.HEALTH_STATES:
        return states.HEALTH_UNKNOWN, None, sources
    return health, reason, sources


def held(device):
    """Whether the device's status is error because of its health."""
    return (device.status == states.DEVICE_ERROR and
            (device.status_reason or '').startswith(_HOLDS))


def apply(device, report, now):
    """Record what an agent's report says of the health of ``device`` (a
    stored row or a new one of ``new_rows``); hold it in error while it is
    failed or flapping.

    :param now: gives the database's time of the transaction (see
        ``clock.now``); called only when the health changes.
    :returns: (whether any column changed, a ``Change`` when its health or
        status did, else None).
    """
    health, reason, sources = reported(report)
    before = _snapshot(device)
    old_health, old_status = device.health, device.status
    _set(device, health_reason=reason[:255] if reason else None,
         health_sources=json.dumps(sources))
    if health != old_health:
        if old_health is not None and (
                (health == states.HEALTH_FAILED) !=
                (old_health == states.HEALTH_FAILED)):
            _count_flap(device, now())
        device.health, device.health_since = health, now()
    if health == states.HEALTH_FAILED:
        hold(device, states.UNHEALTHY + (reason or 'failed'))
    if (device.health_flaps or 0) > CONF.conductor.health_flap_limit:
        hold(device, states.FLAPPING + '%d health changes in %d seconds; '
              'enable the device once it is fixed' % (
                  device.health_flaps, CONF.conductor.health_flap_window))
    change = None
    if health != old_health or device.status != old_status:
        change = Change(device.uuid, device.hostname, old_health, health,
                        reason, old_status, device.status)
    return _snapshot(device) != before, change


_COLUMNS = ('health', 'health_reason', 'health_sources', 'health_since',
            'health_flaps', 'health_flaps_since', 'resume_status', 'status',
            'status_reason')


def _snapshot(device):
    return tuple(getattr(device, name, None) for name in _COLUMNS)


@session.retry_on_conflict
@main.writer
def release(context, uuid):
    """An operator's enable of a device held by its health: it returns to
    the status it had, its flap count cleared, and a failed verdict is
    unknown until the agent's next check.

    :returns: that status; None when the device is not held.
    """
    device = context.session.scalars(
        sa.select(models.Device).where(models.Device.uuid == uuid)
        .with_for_update()).first()
    if device is None or not held(device):
        return None
    back = device.resume_status or states.DEVICE_READY
    device.health_flaps, device.health_flaps_since = 0, None
    if device.health == states.HEALTH_FAILED:
        # NOTE(health): the operator vouches for the device: a failed
        # verdict would keep it reserved and refuse its binds
        # (states.refuses_binds). The agent's next check judges it anew
        # and holds it again if it still fails.
        device.health = states.HEALTH_UNKNOWN
        device.health_reason = ('enabled by an operator after: %s' % (
            device.health_reason or 'a failed check'))[:255]
    device.status, device.status_reason = back, None
    device.resume_status = None
    device.updated_at = clock.now(context.session)
    return back


def _count_flap(device, at):
    since = device.health_flaps_since
    window = datetime.timedelta(seconds=CONF.conductor.health_flap_window)
    if since is None or at - since > window:
        device.health_flaps, device.health_flaps_since = 1, at
    else:
        device.health_flaps = (device.health_flaps or 0) + 1


def hold(device, reason):
    """Error with ``reason``, remembering the status to resume; an error
    of another cause (an activation that failed) stays as it is, and so
    does a hold only an operator releases (flapping, a failed scrub)."""
    reason = reason[:255]
    if device.status == states.DEVICE_ERROR:
        current = device.status_reason or ''
        if held(device) and not (current.startswith(_OPERATOR_ONLY) and
                                 not reason.startswith(_OPERATOR_ONLY)):
            device.status_reason = reason
        return
    device.resume_status = _RESUMES.get(device.status, device.status)
    device.status, device.status_reason = states.DEVICE_ERROR, reason


def _set(row, **values):
    changed = False
    for name, value in values.items():
        if getattr(row, name, None) != value:
            setattr(row, name, value)
            changed = True
    return changed


@session.retry_on_conflict
@main.writer
def recover(context, agent_binary, recover_after):
    """Return to their resumed status the held devices that have been
    healthy for ``recover_after`` checks of their agent: the checks the
    agent made (one per report interval) between the report that said so
    and its last heartbeat.

    :returns: a ``Change`` per device returned.
    """
    dev, svc = models.Device, models.Service
    rows = context.session.execute(
        sa.select(dev.id, dev.uuid, dev.hostname, dev.health,
                  dev.health_reason, dev.health_since, dev.resume_status,
                  svc.last_seen_up, svc.report_interval)
        .join(svc, sa.and_(svc.host == dev.hostname,
                           svc.binary == agent_binary))
        .where(dev.status == states.DEVICE_ERROR,
               dev.status_reason.like(states.UNHEALTHY + '%'),
               dev.health.in_(_RECOVERED))).all()
    done = []
    for row in rows:
        if row.health_since is None or row.last_seen_up is None:
            continue
        interval = row.report_interval or CONF.agent.report_interval
        checks = 1 + int((row.last_seen_up - row.health_since)
                         .total_seconds() // interval)
        if checks < recover_after:
            continue
        back = row.resume_status or states.DEVICE_READY
        swapped = context.session.execute(
            sa.update(dev)
            .where(dev.id == row.id, dev.status == states.DEVICE_ERROR,
                   dev.status_reason.like(states.UNHEALTHY + '%'),
                   dev.health_since == row.health_since)
            .values(status=back, status_reason=None, resume_status=None,
                    updated_at=clock.utc_now())).rowcount
        if swapped:
            done.append(Change(row.uuid, row.hostname, row.health,
                               row.health, row.health_reason,
                               states.DEVICE_ERROR, back))
    return done


@main.reader
def affected_arqs(context, device_ids, projects=None):
    """``{device id: [uuids of the ARQs bound or binding to it]}``.

    :param projects: a dict to fill with each of those ARQs' project.
    """
    if not device_ids:
        return {}
    arq, dep = models.AcceleratorRequest, models.Deployable
    found = {}
    for device_id, uuid, project in context.session.execute(
            sa.select(dep.device_id, arq.uuid, arq.project_id)
            .join(dep, arq.deployable_id == dep.id)
            .where(dep.device_id.in_(sorted(set(device_ids))),
                   arq.state.in_(states.ARQ_HOLDS_DEVICE))
            .order_by(arq.uuid)):
        found.setdefault(device_id, []).append(uuid)
        if projects is not None:
            projects[uuid] = project
    return found


@main.reader
def details(context, agent_binary, hostnames=None):
    """What a device's health shows beyond its columns: when its agent last
    checked it (``{hostname: its agent's last heartbeat}``, as UTC text)
    and ``{device uuid: affected ARQ uuids}`` of its failed and draining
    devices (the ARQs to evacuate, or to wait for), with ``{ARQ uuid: its
    project}`` of those under ``projects`` (for the API to show each
    caller only what it may see).

    :param hostnames: the hosts whose devices are shown; None: all.
    """
    svc, dev = models.Service, models.Device
    checked = sa.select(svc.host, svc.last_seen_up).where(
        svc.binary == agent_binary)
    failed = sa.select(dev.id, dev.uuid).where(sa.or_(
        dev.health == states.HEALTH_FAILED,
        dev.status == states.DEVICE_DRAINING))
    if hostnames is not None:
        hosts = sorted(set(hostnames))
        checked = checked.where(svc.host.in_(hosts))
        failed = failed.where(dev.hostname.in_(hosts))
    seen = {host: _text(at) for host, at in context.session.execute(checked)
            if at is not None}
    uuids = dict(context.session.execute(failed).all())
    projects = {}
    arqs = affected_arqs(context, list(uuids), projects)
    return {'checked': seen,
            'affected': {uuids[device_id]: found
                         for device_id, found in arqs.items()},
            'projects': projects}


def _text(value):
    return value.replace(microsecond=0).isoformat()


@main.reader
def affected_of(context, uuid):
    """Uuids of the ARQs bound or binding to the device ``uuid``."""
    device_id = context.session.scalar(
        sa.select(models.Device.id).where(models.Device.uuid == uuid))
    if device_id is None:
        return []
    return affected_arqs(context, [device_id]).get(device_id, [])
