"""Applying agents' inventory reports to the device rows of their hosts."""

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import host_rows
from cyborg.db import models
from cyborg.db import services as service_queries
from cyborg.db import session as db_session
from cyborg.db.session import main
from cyborg.drivers.report import DeviceKey

LOG = logging.getLogger(__name__)

AGENT_BINARY = service_queries.AGENT_BINARY


class _Interleaved(Exception):
    """Another conductor recorded one of the batch's hosts meanwhile."""


#: A report to apply after its batch (its host is in it twice).
LATER = object()
#: What makes a whole batch be applied again, report by report.
RETRIABLE = (_Interleaved, db_exc.DBDuplicateEntry, db_exc.DBDeadlock)


# NOTE(inventory): a deadlock or certification failure runs the whole batch
# again; one that persists, and the other RETRIABLE errors, make the
# caller apply the reports one by one.
@db_session.retry_on_conflict
@main.writer
def apply_together(context, reports, admit):
    """Apply reports in one transaction (see the conductor's
    ``inventory.apply_reports``); ``admit(report, stored_generations)`` says
    why a report must be turned away (an exception) or None.

    :returns: one outcome per report: the result for the agent, an
        exception instance, or ``LATER`` (apply it after this batch).
    :raises: one of ``RETRIABLE`` when the batch as a whole cannot be
        written; nothing is.
    """
    session = context.session
    outcomes = [None] * len(reports)
    first = {}
    for index, report in enumerate(reports):
        if report.host in first:
            # NOTE(inventory): the same host twice in one batch (an agent
            # resent before its first copy was applied): the later copy
            # goes after this batch, against what the first one wrote.
            outcomes[index] = LATER
        else:
            first[report.host] = index
    stored = service_queries.agent_generations(context, AGENT_BINARY,
                                               list(first))
    accepted = {}
    for host, index in first.items():
        problem = admit(reports[index], stored)
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
    host_rows.insert_new(session, hosts.values())
    for host, report in accepted.items():
        outcomes[first[host]] = hosts[host].result(report.generation)
    return outcomes


def _apply(rows, report):
    rows.installs = report.installs
    rows.installed(report.installed)
    seen = {rows.upsert(reported) for reported in report.devices}
    # NOTE(inventory): parse, not tuple(): an older agent's keys may be
    # encoded otherwise, and must still name the same devices.
    held = {DeviceKey.parse(key) for key in report.held}
    if report.delta:
        gone = [DeviceKey.parse(key) for key in report.removed]
    else:
        gone = [key for key, device in rows.devices.items()
                if key not in seen and
                device.driver_name not in report.failed_drivers]
    for key in gone:
        rows.remove(key, key in held)


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
                 'report_interval', 'scrubbing_drivers'):
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
    return host_rows.with_children(stmt)


def device_state(device):
    """The state of one device row (its control path, deployables and
    their attributes loaded)."""
    cpid = device.controlpath_ids[0]
    return host_rows.state(host_rows.device_key(cpid.cpid_type,
                                                cpid.cpid_info), device)
