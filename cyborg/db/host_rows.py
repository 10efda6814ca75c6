"""The device rows of reporting hosts, loaded together and changed in place."""

import functools
import json

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import orm

from cyborg import states
from cyborg.common import decisions
from cyborg.db import clock
from cyborg.db import device_health
from cyborg.db import models
from cyborg.db import new_rows
from cyborg.drivers import report as driver_report
from cyborg.objects import attribute as attribute_obj

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

UNHEALTHY = states.UNHEALTHY
#: status_reason of a device reported with files that could not be read.
PARTLY = 'partly readable: '


def _json(value):
    return json.dumps(value, sort_keys=True)


def device_key(cpid_type, cpid_info):
    """Identity of a device on its host; cpid_info as stored (JSON)."""
    return driver_report.DeviceKey(cpid_type, cpid_info)


def key_of(reported):
    """The identity of a reported ``report.Device``."""
    return reported.key


def with_children(stmt, handles=True):
    """``stmt`` on devices, loading what a host's inventory compares (what
    its state shows, without ``handles``)."""
    deployables = orm.selectinload(models.Device.deployables)
    loads = [orm.selectinload(models.Device.controlpath_ids),
             deployables.selectinload(models.Deployable.attributes),
             deployables.selectinload(models.Deployable.accelerator)]
    if handles:
        loads.append(deployables.selectinload(
            models.Deployable.attach_handles))
    return stmt.options(*loads)


def load_hosts(session, hosts):
    """``{host: HostRows}`` of every host named, in five SELECTs in all."""
    found = {host: [] for host in hosts}
    if hosts:
        for device in session.scalars(with_children(
                sa.select(models.Device)
                .where(models.Device.hostname.in_(sorted(hosts))))):
            found[device.hostname].append(device)
    return {host: HostRows(session, host, devices)
            for host, devices in found.items()}


class HostRows:
    """The devices of one host, changed in place within one session."""

    def __init__(self, session, host, devices):
        self.session = session
        #: The database's time of this transaction, read on first use.
        self.now = functools.partial(clock.now, session)
        self.host = host
        self.devices = {}
        for device in devices:
            for cpid in device.controlpath_ids:
                self.devices[device_key(cpid.cpid_type,
                                        cpid.cpid_info)] = device
        self.changed = False
        #: ``device_health.Change`` of each device whose health or status
        #: this report changed.
        self.health_changes = []
        #: ``device_health.Change`` of the other status changes (install
        #: outcomes, lost devices), for their notifications.
        self.status_changes = []
        self.new = []
        self.doomed = []
        #: Stored devices whose row this report changed.
        self.updated = []
        #: The agent runs the install step of the devices this report
        #: adds (agent RPC 1.6), instead of asking for an activation.
        self.installs = False

    def deployable_names(self):
        return {dep.name for device in self.devices.values()
                for dep in device.deployables}

    def upsert(self, reported):
        key = key_of(reported)
        device = self.devices.get(key)
        if device is None:
            self.devices[key] = device = _new_device(self.host, reported,
                                                     self.health_changes,
                                                     self.now)
            if (self.installs and CONF.conductor.auto_activate_new_devices
                    and device.status == states.DEVICE_INACTIVE):
                # NOTE(inventory): marked in the report's own transaction,
                # so that no operator's activate can start a second one.
                device.status = states.DEVICE_ACTIVATING
            self.new.append(device)
            self.changed = True
        elif _update_device(device, reported, self.health_changes,
                            self.status_changes, self.now):
            self.updated.append(device)
            self.changed = True
        return key

    def remove(self, key, held=False):
        device = self.devices.get(key)
        if device is None:
            return
        if decisions.in_use([_in_use(dep) for dep in device.deployables],
                            held=held):
            if device.status != states.DEVICE_LOST:
                LOG.warning('Device %s on %s disappeared while in use; '
                            'marking it lost', device.uuid, self.host)
                self._status(device, states.DEVICE_LOST, device.status_reason)
                self.changed = True
            return
        LOG.info('Device %s on %s disappeared; removing it', device.uuid,
                 self.host)
        del self.devices[key]
        self.doomed.append(device)
        self.changed = True

    def installed(self, outcomes):
        """Apply what the agent says of the install steps it ran:
        ``{device uuid: None (done) or why it failed}``.

        A device no longer activating (an operator or the recovery of
        interrupted activations changed it meanwhile) keeps its status.
        """
        by_uuid = {d.uuid: d for d in self.devices.values()}
        for uuid, failure in sorted(outcomes.items()):
            device = by_uuid.get(uuid)
            if device is None or device.status != states.DEVICE_ACTIVATING:
                LOG.info('Host %s installed device %s, which is no longer '
                         'activating; its status stays', self.host, uuid)
                continue
            if failure is None:
                reason = device.status_reason
                self._status(device, states.DEVICE_READY,
                             reason if reason and reason.startswith(PARTLY)
                             else None)
                LOG.info('Device %s on %s is ready', uuid, self.host)
            else:
                LOG.warning('Activation of device %s on %s failed: %s', uuid,
                            self.host, failure)
                reason = states.ACTIVATION_FAILED + str(failure)
                self._status(device, states.DEVICE_ERROR, reason[:255])
            self.changed = True

    def _status(self, device, status, reason):
        old = device.status
        _set(device, status=status, status_reason=reason)
        self.status_changes.append(device_health.Change(
            device.uuid, device.hostname, device.health, device.health,
            reason, old, status))

    def result(self, generation):
        """What the agent is told; call once the session is flushed.

        ``install`` names the devices whose install step the agent runs
        now (agent RPC 1.6 and newer), ``activate`` the ones an older agent
        asks to activate.
        """
        new = {id(d) for d in self.new}
        install = [{'uuid': d.uuid, 'driver_name': d.driver_name,
                    'controlpath': k.wire()}
                   for k, d in sorted(self.devices.items())
                   if id(d) in new and d.status == states.DEVICE_ACTIVATING]
        activate = []
        if CONF.conductor.auto_activate_new_devices and not self.installs:
            activate = [d.uuid for d in self.new
                        if d.status == states.DEVICE_INACTIVE]
        return {
            'changed': self.changed,
            'generation': generation,
            'activate': activate,
            'install': install,
            'devices': [state(k, d)
                        for k, d in sorted(self.devices.items())],
            # NOTE(inventory): for the conductor, which announces them once
            # the transaction is committed; never sent to the agent.
            'health_changes': list(self.health_changes),
            'status_changes': list(self.status_changes),
            # NOTE(inventory): the rows added, changed and deleted, for the
            # conductor's notifications; never sent to the agent either.
            'created': list(self.new),
            'updated': list(self.updated),
            'deleted': list(self.doomed),
        }


def insert_new(session, inventories):
    """Insert the devices these hosts' reports added; after the flush, so
    that a deployable name a vanished device freed can be taken again."""
    new_rows.insert(session, [device for rows in inventories
                              for device in rows.new])


def delete_doomed(session, inventories):
    """One DELETE for every vanished device of these hosts.

    The database cascades to their control paths, deployables, attributes
    and handles; the ORM forgets the rows it had loaded.
    """
    doomed = [device for rows in inventories for device in rows.doomed]
    if not doomed:
        return
    for device in doomed:
        session.expunge(device)
    with session.no_autoflush:
        session.execute(sa.delete(models.Device.__table__).where(
            models.Device.__table__.c.id.in_([d.id for d in doomed])))


def state(key, device):
    """What the agent applies of one device: ``providers``, the
    conductor's decision for each deployable's provider (see
    ``decisions.provider``); and for agents older than those decisions,
    its status, operators' traits and the deployables attached through
    /v1, from which they decide on their own."""
    found = {'uuid': device.uuid, 'controlpath': key.wire(),
             'status': device.status}
    traits = {dep.name: _operator_traits(dep) for dep in device.deployables}
    traits = {name: names for name, names in traits.items() if names}
    if traits:
        found['traits'] = traits
    taken = sorted(dep.name for dep in device.deployables if _attached(dep))
    if taken:
        found['taken'] = taken
    services = json.loads(device.services or '[]')
    found['providers'] = {
        dep.name: decisions.provider(
            device.status, services=services,
            driver_traits=[attr.value for attr in dep.attributes
                           if attr.key != 'rc' and
                           attribute_obj.driver_managed(attr.key)],
            operator_traits=traits.get(dep.name, ()),
            attached=dep.name in taken,
            handles_in_use=[h.in_use for h in _loaded(dep, 'attach_handles')],
            fault=device.health == states.HEALTH_FAILED,
            cleaning=getattr(dep, 'cleaning_since', None) is not None)
        for dep in device.deployables}
    return found


def _operator_traits(dep):
    return sorted(attr.value for attr in dep.attributes
                  if attribute_obj.is_trait_key(attr.key))


def _loaded(row, name):
    # NOTE(inventory): only what is loaded: a deployable this report adds
    # to a stored device has no handle in use, and reading would cost a
    # SELECT per row.
    if new_rows.is_new(row):
        return getattr(row, name)
    return sa.inspect(row).dict.get(name) or ()


def _attached(dep):
    # NOTE(inventory): a deployable added by this report has no loaded
    # accelerator row (and cannot be attached yet); reading the attribute
    # would cost one SELECT per new deployable.
    if new_rows.is_new(dep):
        return False
    accelerator = sa.inspect(dep).dict.get('accelerator')
    return accelerator is not None and accelerator.attach_type is not None


def _partly(warnings):
    """The status_reason of a device some files of which did not read."""
    return (PARTLY + '; '.join(warnings))[:255] if warnings else None


def _new_device(host, reported, changes, now):
    device = new_rows.device(host, reported, states.DEVICE_INACTIVE,
                             _partly(reported.warnings))
    _changed, change = device_health.apply(device, reported, now)
    if change is not None and change.health != states.HEALTH_OK:
        changes.append(change)
    return device


def _new_deployable(dep, cpid):
    row = models.Deployable(
        uuid=uuidutils.generate_uuid(), name=dep.name,
        num_accelerators=dep.num_accelerators, driver_name=dep.driver_name,
        rp_uuid=driver_report.provider_uuid(dep.name))
    for key, value in dep.attributes().items():
        row.attributes.append(models.Attribute(
            uuid=uuidutils.generate_uuid(), key=key, value=value))
    for handle in dep.attach_handles:
        row.attach_handles.append(_new_handle(handle, cpid))
    return row


def _new_handle(handle, cpid):
    return models.AttachHandle(
        uuid=uuidutils.generate_uuid(), attach_type=handle.attach_type,
        attach_info=_json(handle.attach_info), in_use=handle.in_use,
        controlpath=cpid)


def _set(row, **values):
    """Assign only what differs; returns whether anything did."""
    changed = False
    for name, value in values.items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed = True
    return changed


def _update_device(device, reported, changes, status_changes, now):
    changed = _set(device, type=reported.type, vendor=reported.vendor,
                   model=reported.model,
                   std_board_info=_json(reported.std_board_info),
                   vendor_board_info=_json(reported.vendor_board_info),
                   driver_name=reported.driver_name,
                   services=_json(sorted(reported.services)),
                   mode=reported.mode,
                   modes=new_rows.modes_json(reported.modes),
                   offer_reason=reported.offer_reason)
    changed |= _update_health(device, reported, changes, status_changes,
                              now)
    changed |= _update_warnings(device, reported.warnings)
    cpid = device.controlpath_ids[0]
    by_name = {dep.name: dep for dep in device.deployables}
    reported_names = set()
    for dep in reported.deployables:
        reported_names.add(dep.name)
        row = by_name.get(dep.name)
        if row is None:
            device.deployables.append(_new_deployable(dep, cpid))
            changed = True
            continue
        changed |= _set(row, num_accelerators=dep.num_accelerators,
                        driver_name=dep.driver_name,
                        rp_uuid=driver_report.provider_uuid(dep.name))
        changed |= _sync_attributes(row, dep.attributes())
        changed |= _sync_handles(row, dep.attach_handles, cpid)
    for name, row in by_name.items():
        if name not in reported_names and not _in_use(row):
            device.deployables.remove(row)
            changed = True
    return changed


def _update_health(device, reported, changes, status_changes, now):
    """Status changes that follow what the agent says of health."""
    changed = False
    if device.status == states.DEVICE_LOST:
        # NOTE(inventory): a lost device that comes back starts over as
        # inactive; the operator decides when it is ready again.
        changed = _set(device, status=states.DEVICE_INACTIVE,
                       status_reason=None)
        status_changes.append(device_health.Change(
            device.uuid, device.hostname, device.health, device.health,
            None, states.DEVICE_LOST, states.DEVICE_INACTIVE))
    health_changed, change = device_health.apply(device, reported, now)
    if change is not None:
        changes.append(change)
    return changed or health_changed


def _update_warnings(device, warnings):
    """status_reason says what of a device could not be read, unless it
    says something else (a fault, an operator's or a lifecycle reason)."""
    reason = device.status_reason or ''
    if reason and not reason.startswith(PARTLY):
        return False
    return _set(device, status_reason=_partly(warnings))


def _sync_attributes(row, wanted):
    changed = False
    current = {attr.key: attr for attr in row.attributes}
    for key, value in wanted.items():
        attr = current.get(key)
        if attr is None:
            row.attributes.append(models.Attribute(
                uuid=uuidutils.generate_uuid(), key=key, value=value))
            changed = True
        else:
            changed |= _set(attr, value=value)
    for key, attr in current.items():
        # NOTE(inventory): keys operators added are theirs to delete.
        if key not in wanted and attribute_obj.driver_managed(key):
            row.attributes.remove(attr)
            changed = True
    return changed


def _sync_handles(row, reported, cpid):
    changed = False
    current = {h.attach_info: h for h in row.attach_handles}
    wanted = {_json(h.attach_info): h for h in reported}
    for info, handle in wanted.items():
        existing = current.get(info)
        if existing is None:
            row.attach_handles.append(_new_handle(handle, cpid))
            changed = True
        else:
            changed |= _set(existing, attach_type=handle.attach_type)
    for info, existing in current.items():
        if info not in wanted and not existing.in_use:
            row.attach_handles.remove(existing)
            changed = True
    return changed


def _in_use(deployable):
    return any(h.in_use for h in deployable.attach_handles)
