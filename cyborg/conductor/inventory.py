"""Applies agents' inventory reports, many hosts to a transaction."""

import dataclasses
import re

from oslo_log import log as logging
from oslo_utils import versionutils

from cyborg import exception
from cyborg import states
from cyborg import upgrade_levels
from cyborg.db import api as dbapi
from cyborg.db import device_health
from cyborg.db import host_rows
from cyborg.db import inventory as inventory_db
from cyborg.db import services as service_queries
from cyborg.drivers import report as driver_report
from cyborg.notifications import base as notifications
from cyborg.notifications import device as device_notifications

LOG = logging.getLogger(__name__)

AGENT_BINARY = inventory_db.AGENT_BINARY
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
    #: Install steps the agent ran since its last report: ``{device uuid:
    #: None (done) or why it failed}``.
    installed: dict = dataclasses.field(default_factory=dict)

    @property
    def delta(self):
        return self.base_generation is not None

    @property
    def installs(self):
        """Whether the agent runs the install step of the devices the
        answer names (agent RPC 1.6), and the upgrade pin allows it."""
        return agent_installs((self.details or {}).get('rpc_version'))


#: The agent RPC version from which agents run install steps themselves.
AGENT_INSTALLS = '1.6'


def agent_installs(rpc_version):
    """Whether an agent serving ``rpc_version`` runs the install step of
    new devices when its report's answer names them."""
    if not rpc_version:
        return False
    cap = upgrade_levels.version_cap('agent', AGENT_INSTALLS)
    try:
        return (versionutils.convert_version_to_tuple(rpc_version) >=
                versionutils.convert_version_to_tuple(AGENT_INSTALLS) and
                versionutils.convert_version_to_tuple(cap) >=
                versionutils.convert_version_to_tuple(AGENT_INSTALLS))
    except ValueError:
        return False


_LATER = inventory_db.LATER
_RETRIABLE = inventory_db.RETRIABLE
host_states = inventory_db.host_states
state_of = inventory_db.state_of
device_state = inventory_db.device_state


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
        outcomes = inventory_db.apply_together(context, reports, _admit)
    except _RETRIABLE as exc:
        LOG.info('A batch of %d reports met another writer (%s); applying '
                 'them one by one', len(reports), type(exc).__name__)
        outcomes = [_LATER] * len(reports)
    outcomes = [_apply_alone(context, report) if outcome is _LATER
                else outcome
                for report, outcome in zip(reports, outcomes, strict=True)]
    for outcome in outcomes:
        if isinstance(outcome, dict):
            announce(context, outcome.pop('health_changes', ()))
            for change in outcome.pop('status_changes', ()):
                notify_change(context, change)
            device_notifications.inventory_changed(
                context, created=outcome.pop('created', ()),
                updated=outcome.pop('updated', ()),
                deleted=outcome.pop('deleted', ()))
    return outcomes


def announce(context, changes):
    """Say what reports changed of devices' health, once committed.

    A failed device is already reserved: the report's answer tells its
    agent, in the same round trip.
    """
    for change in changes:
        if change.health == states.HEALTH_FAILED:
            LOG.warning('Device %s on %s failed its health checks (%s); it '
                        'is %s and excluded from scheduling', change.uuid,
                        change.hostname, change.reason, change.status)
        elif change.old_status != change.status:
            LOG.warning('Device %s on %s is %s: %s', change.uuid,
                        change.hostname, change.status, change.reason)
        else:
            LOG.info('Device %s on %s: health %s (was %s)%s', change.uuid,
                     change.hostname, change.health,
                     change.old_health or 'not reported',
                     ': %s' % change.reason if change.reason else '')
        notify_change(context, change)


def notify_change(context, change):
    """The notifications of a ``device_health.Change``."""
    def device():
        return dbapi.devices.get(context, change.uuid)

    if change.health != change.old_health:
        affected = ()
        if (change.health == states.HEALTH_FAILED and
                notifications.enabled()):
            affected = device_health.affected_of(context, change.uuid)
        device_notifications.health_changed(
            context, device, change.old_health, change.health,
            change.reason, affected_arqs=affected)
    if change.status != change.old_status:
        device_notifications.status_changed(
            context, device, change.old_status, change.status,
            change.reason)


def _apply_alone(context, report):
    for attempt in range(1, ALONE_ATTEMPTS + 1):
        try:
            return inventory_db.apply_together(
                context, [report], _admit)[0]
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


#: What a host name may be: what Nova and Placement accept, without
#: whitespace or control characters.
_HOST = re.compile(r'^[^\s\x00-\x1f\x7f/]{1,255}$')


def check_host(host, named=None):
    """Turn away a report from a host whose name is not one, or that names
    another host than the one it is sent as.

    :raises Invalid:
    """
    if not isinstance(host, str) or not _HOST.match(host):
        LOG.warning('Ignoring a report from an invalid host name %r', host)
        raise exception.Invalid(reason='invalid host name %r' % (host,))
    if named is not None and named != host:
        LOG.warning('Ignoring a report of host %s sent as host %s', named,
                    host)
        raise exception.Invalid(
            reason='report of host %s sent as %s' % (named, host))


def _details(report):
    return {name: report.get(name)
            for name in ('version', 'rpc_version', 'drivers',
                         'available_drivers', 'report_interval',
                         'scrubbing_drivers')}


def whole_report(host, report):
    """The ``Report`` of a whole inventory as an agent sent it.

    :raises Invalid: a bad host name, or the report names another host.
    """
    parsed = driver_report.HostReport.from_primitive(report)
    check_host(host, parsed.host)
    return Report(
        host=host, devices=parsed.devices,
        generation=report.get('generation'),
        failed_drivers=tuple(report.get('failed_drivers', ())),
        details=_details(report), held=tuple(report.get('held', ())),
        installed=_installed(report))


def _installed(report):
    """The install outcomes a report carries, checked.

    :raises Invalid: not a map of device uuids to None or a reason.
    """
    installed = report.get('installed') or {}
    if not isinstance(installed, dict) or not all(
            isinstance(uuid, str) and (why is None or isinstance(why, str))
            for uuid, why in installed.items()):
        raise exception.Invalid(reason='installed must map device uuids to '
                                       'null or a reason')
    return installed


def delta_report(host, delta):
    """The ``Report`` of what changed since the agent's last generation.

    :raises Invalid: a bad host name.
    """
    check_host(host)
    changed = driver_report.HostReport.from_primitive(
        {'host': host, 'devices': delta.get('changed', [])}).devices
    return Report(
        host=host, devices=changed,
        removed=list(delta.get('removed', [])),
        generation=delta['generation'],
        base_generation=delta['base_generation'],
        details=_details(delta), held=tuple(delta.get('held', ())),
        installed=_installed(delta))


def record_heartbeats(context, beats):
    """Record a batch of ``(host, generation)`` heartbeats in one UPDATE;
    for each, whether its generation is the one recorded."""
    generations = {}
    for host, generation in beats:
        # NOTE(conductor): two heartbeats of one host in one batch
        # (a resend): the later generation is the agent's now.
        generations[host] = generation
    found = service_queries.agent_heartbeats(context, AGENT_BINARY,
                                             generations)
    answers = []
    for host, generation in beats:
        current = found[host] and generations[host] == generation
        if not current:
            LOG.info('Host %s sent a heartbeat for generation %s, which '
                     'is not the one recorded; it must send its whole '
                     'inventory', host, generation)
        answers.append(current)
    return answers
