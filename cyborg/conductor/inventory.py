"""Applies agents' inventory reports, many hosts to a transaction."""

import dataclasses

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from cyborg import exception
from cyborg.conductor import host_rows
from cyborg.db import models
from cyborg.db import services as service_queries
from cyborg.db.session import main

LOG = logging.getLogger(__name__)

AGENT_BINARY = 'cyborg-agent'
UNHEALTHY = host_rows.UNHEALTHY
device_key = host_rows.device_key
#: Attempts at one report on its own when its batch could not be applied.
ALONE_ATTEMPTS = 5


@dataclasses.dataclass
class Report:
    """One agent's report as the conductor queues it.

    A whole inventory when ``base_generation`` is None; otherwise a delta
    whose ``devices`` are the added or changed ones.
    """

    host: str
    devices: list
    generation: int | None = None
    base_generation: int | None = None
    removed: list = dataclasses.field(default_factory=list)
    failed_drivers: tuple = ()
    details: dict | None = None
    held: tuple = ()

    @property
    def delta(self):
        return self.base_generation is not None


class _Interleaved(Exception):
    """Another conductor recorded one of the batch's hosts meanwhile."""


_LATER = object()
_RETRIABLE = (_Interleaved, db_exc.DBDuplicateEntry, db_exc.DBDeadlock)


def apply_reports(context, reports):
    """Apply many agents' reports, in one transaction when they allow it.

    A report that is stale, out of sequence or malformed is turned away on
    its own (its outcome is the exception) and never stops the others.
    When the batch as a whole cannot be written (another conductor wrote
    one of its hosts meanwhile, a deadlock), each report is applied again
    in its own transaction.

    :returns: one outcome per report, in order: the result for the agent
        (see ``HostRows.result``) or an exception instance.
    """
    try:
        outcomes = _apply_together(context, reports)
    except _RETRIABLE as exc:
        LOG.info('A batch of %d reports met another writer (%s); applying '
                 'them one by one', len(reports), type(exc).__name__)
        outcomes = [_LATER] * len(reports)
    return [_apply_alone(context, report) if outcome is _LATER else outcome
            for report, outcome in zip(reports, outcomes, strict=True)]


def _apply_alone(context, report):
    for attempt in range(1, ALONE_ATTEMPTS + 1):
        try:
            return _apply_together(context, [report])[0]
        except _RETRIABLE as exc:
            LOG.info('The report of host %s met another writer (%s, '
                     'attempt %d)', report.host, type(exc).__name__, attempt)
    return exception.GenerationConflict(host=report.host,
                                        generation=report.base_generation)


def apply_report(context, report, failed_drivers=(), generation=None,
                 details=None, held=()):
    """Make the database hold exactly what ``report`` says of its host.

    Devices are matched by control path, deployables by name, attributes by
    key and attach handles by their info. Devices of drivers that failed this
    pass are left alone; a vanished device that still has handles in use is
    kept and marked lost instead of deleted, and so is one the agent says
    Placement still has allocations on (``held``, device keys).

    :param details: the agent's ``version``, ``rpc_version``, ``drivers``
        and ``report_interval``, recorded with its liveness.
    :returns: ``{'changed', 'generation', 'activate', 'devices'}``
    :raises StaleReport: the conductor holds a newer generation.
    """
    return _one(context, Report(
        host=report.host, devices=report.devices, generation=generation,
        failed_drivers=tuple(failed_drivers), details=details,
        held=tuple(held)))


def apply_delta(context, host, changed, removed, base_generation,
                generation, details=None, held=()):
    """Apply only what changed since ``base_generation``.

    :param changed: ``report.Device`` objects added or changed.
    :param removed: device keys ``(cpid_type, cpid_info JSON)`` now gone.
    :param held: those of ``removed`` still allocated in Placement.
    :raises GenerationConflict: the host's stored generation is not
        ``base_generation``; nothing is written.
    """
    return _one(context, Report(
        host=host, devices=changed, removed=list(removed),
        generation=generation, base_generation=base_generation,
        details=details, held=tuple(held)))


def _one(context, report):
    outcome, = apply_reports(context, [report])
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


@main.writer
def _apply_together(context, reports):
    session = context.session
    outcomes = [None] * len(reports)
    first = {}
    for index, report in enumerate(reports):
        if report.host in first:
            # NOTE(inventory): the same host twice in one batch (an agent
            # resent before its first copy was applied): the later copy
            # goes after this batch, against what the first one wrote.
            outcomes[index] = _LATER
        else:
            first[report.host] = index
    stored = service_queries.agent_generations(context, AGENT_BINARY,
                                               list(first))
    accepted = {}
    for host, index in first.items():
        problem = _admit(reports[index], stored)
        if problem is None:
            accepted[host] = reports[index]
        else:
            outcomes[index] = problem
    hosts = host_rows.load_hosts(session, accepted)
    for host, problem in _claimed_names(session, accepted, hosts).items():
        outcomes[first[host]] = problem
        del accepted[host], hosts[host]
    if not service_queries.record_reports(context, AGENT_BINARY, {
            host: (stored.get(host, service_queries.ABSENT),
                   _service_values(report))
            for host, report in accepted.items()}):
        raise _Interleaved()
    for host, report in accepted.items():
        _apply(hosts[host], report)
    host_rows.delete_doomed(session, hosts.values())
    session.flush()
    for host, report in accepted.items():
        outcomes[first[host]] = hosts[host].result(report.generation)
    return outcomes


def _apply(rows, report):
    seen = {rows.upsert(reported) for reported in report.devices}
    held = {tuple(key) for key in report.held}
    if report.delta:
        gone = [tuple(key) for key in report.removed]
    else:
        gone = [key for key, device in rows.devices.items()
                if key not in seen and
                device.driver_name not in report.failed_drivers]
    for key in gone:
        rows.remove(key, key in held)


def _admit(report, stored):
    """Why ``report`` must not be applied (an exception), or None."""
    duplicate = _duplicate(report)
    if duplicate:
        LOG.warning('Ignoring the report of host %s: %s', report.host,
                    duplicate)
        return exception.InvalidReport(host=report.host, reason=duplicate)
    current = stored.get(report.host, service_queries.ABSENT)
    if report.delta:
        if current != report.base_generation:
            LOG.info('Host %s sent changes on top of generation %s but %s '
                     'is recorded; it must send its whole inventory',
                     report.host, report.base_generation,
                     'none' if current is service_queries.ABSENT
                     else current)
            return exception.GenerationConflict(
                host=report.host, generation=report.base_generation)
        return None
    if (report.generation is not None and isinstance(current, int) and
            report.generation < current):
        LOG.info('Ignoring a stale report of host %s: generation %d, '
                 'while %d is recorded', report.host, report.generation,
                 current)
        return exception.StaleReport(host=report.host,
                                     generation=report.generation,
                                     current=current)
    return None


def _duplicate(report):
    """What a report names twice, if anything."""
    keys, names = set(), set()
    for device in report.devices:
        key = host_rows.key_of(device)
        if key in keys:
            return 'device %s %s reported twice' % key
        keys.add(key)
        for dep in device.deployables:
            if dep.name in names:
                return 'deployable %s reported twice' % dep.name
            names.add(dep.name)
    return None


def _claimed_names(session, accepted, hosts):
    """Reports that name a deployable another host owns: one SELECT.

    Deployable names are unique across hosts; a report claiming another
    host's name (or one an earlier report of this batch claims) is turned
    away whole, so that it cannot touch the other host's rows.
    """
    wanted = {}
    for host, report in accepted.items():
        owned = hosts[host].deployable_names()
        for device in report.devices:
            for dep in device.deployables:
                if dep.name not in owned:
                    wanted.setdefault(dep.name, []).append(host)
    if not wanted:
        return {}
    owners = dict(session.execute(
        sa.select(models.Deployable.name, models.Device.hostname)
        .join(models.Device, models.Deployable.device_id == models.Device.id)
        .where(models.Deployable.name.in_(sorted(wanted)))).all())
    problems = {}
    for name, claimants in sorted(wanted.items()):
        owner = owners.get(name)
        for host in claimants:
            if host in problems:
                continue
            if owner is None:
                owner = host
            elif owner != host:
                LOG.warning('Ignoring the report of host %s: deployable %s '
                            'belongs to host %s', host, name, owner)
                problems[host] = exception.InvalidReport(
                    host=host, reason='deployable %s belongs to host %s'
                    % (name, owner))
    return problems


def _service_values(report):
    details = report.details or {}
    values = {'report_generation': report.generation}
    for name in ('version', 'rpc_version', 'drivers', 'available_drivers',
                 'report_interval'):
        if details.get(name) is not None:
            values[name] = details[name]
    return values


@main.reader
def host_states(context, host):
    """``[{'uuid', 'controlpath', 'status'[, 'traits']}]`` of every device
    of a host; ``traits``: deployable name -> traits operators added."""
    devices = context.session.scalars(_with_states(
        sa.select(models.Device).where(models.Device.hostname == host))).all()
    return sorted((device_state(device) for device in devices),
                  key=lambda state: state['controlpath'])


@main.reader
def state_of(context, uuid):
    """What ``host_states`` says of one device, by uuid."""
    device = context.session.scalars(_with_states(
        sa.select(models.Device).where(models.Device.uuid == uuid))).first()
    if device is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return device_state(device)


def _with_states(stmt):
    return host_rows.with_children(stmt, handles=False)


def device_state(device):
    """The state of one device row (its control path, deployables and
    their attributes loaded)."""
    cpid = device.controlpath_ids[0]
    return host_rows.state((cpid.cpid_type, cpid.cpid_info), device)
