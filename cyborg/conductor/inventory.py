"""Applies agents' inventory reports (whole or delta) in one transaction."""

import json

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import orm

from cyborg import exception
from cyborg import states
from cyborg.db import models
from cyborg.db import services as service_queries
from cyborg.db.session import main
from cyborg.drivers import report as driver_report
from cyborg.objects import attribute as attribute_obj

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

AGENT_BINARY = 'cyborg-agent'
UNHEALTHY = 'unhealthy: '


def _json(value):
    return json.dumps(value, sort_keys=True)


def _load_host(session, host):
    """All of a host's devices with their children, in five SELECTs."""
    return session.scalars(
        sa.select(models.Device)
        .where(models.Device.hostname == host)
        .options(
            orm.selectinload(models.Device.controlpath_ids),
            orm.selectinload(models.Device.deployables)
            .selectinload(models.Deployable.attributes),
            orm.selectinload(models.Device.deployables)
            .selectinload(models.Deployable.attach_handles),
            orm.selectinload(models.Device.deployables)
            .selectinload(models.Deployable.accelerator))
    ).all()


def device_key(cpid_type, cpid_info):
    """Identity of a device on its host; cpid_info as stored (JSON)."""
    return (cpid_type, cpid_info)


class _HostInventory:
    """The devices of one host, changed in place within one session."""

    def __init__(self, session, host):
        self.session = session
        self.host = host
        self.devices = {}
        for device in _load_host(session, host):
            for cpid in device.controlpath_ids:
                self.devices[device_key(cpid.cpid_type,
                                        cpid.cpid_info)] = device
        self.changed = False
        self.new = []

    def upsert(self, reported):
        key = device_key(reported.controlpath.cpid_type,
                         _json(reported.controlpath.cpid_info))
        device = self.devices.get(key)
        if device is None:
            self.devices[key] = device = _add_device(self.session, self.host,
                                                     reported)
            self.new.append(device)
            self.changed = True
        else:
            self.changed |= _update_device(device, reported)
        return key

    def remove(self, key, held=False):
        device = self.devices.get(key)
        if device is not None:
            self.changed |= _remove_device(self.session, device, held)

    def result(self, generation):
        self.session.flush()
        activate = []
        if CONF.conductor.auto_activate_new_devices:
            activate = [d.uuid for d in self.new
                        if d.status == states.DEVICE_INACTIVE]
        return {
            'changed': self.changed,
            'generation': generation,
            'activate': activate,
            'devices': [_state(k, d) for k, d in sorted(self.devices.items())
                        if sa.inspect(d).persistent],
        }


def _state(key, device):
    state = {'uuid': device.uuid, 'controlpath': list(key),
             'status': device.status}
    traits = {dep.name: sorted(attr.value for attr in dep.attributes
                               if attribute_obj.is_trait_key(attr.key))
              for dep in device.deployables}
    traits = {name: found for name, found in traits.items() if found}
    if traits:
        state['traits'] = traits
    taken = sorted(dep.name for dep in device.deployables if _attached(dep))
    if taken:
        state['taken'] = taken
    return state


def _attached(dep):
    # NOTE(inventory): a deployable added by this report has no loaded
    # accelerator row (and cannot be attached yet); reading the attribute
    # would cost one SELECT per new deployable.
    accelerator = sa.inspect(dep).dict.get('accelerator')
    return accelerator is not None and accelerator.attach_type is not None


def _with_states(stmt):
    return stmt.options(orm.selectinload(models.Device.controlpath_ids),
                        orm.selectinload(models.Device.deployables)
                        .selectinload(models.Deployable.attributes),
                        orm.selectinload(models.Device.deployables)
                        .selectinload(models.Deployable.accelerator))


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


def device_state(device):
    """The state of one device row (its control path, deployables and
    their attributes loaded)."""
    cpid = device.controlpath_ids[0]
    return _state((cpid.cpid_type, cpid.cpid_info), device)


@main.writer
def apply_report(context, report, failed_drivers=(), generation=None,
                 details=None, held=()):
    """Make the database hold exactly what ``report`` says of its host.

    Devices are matched by control path, deployables by name, attributes by
    key and attach handles by their info. Devices of drivers that failed this
    pass are left alone; a vanished device that still has handles in use is
    kept and marked lost instead of deleted, and so is one the agent says
    Placement still has allocations on (``held``, device keys).

    :param details: the agent's ``version``, ``drivers`` and
        ``report_interval``, recorded with its liveness.
    :returns: ``{'changed', 'generation', 'activate', 'devices'}``
    """
    inventory = _HostInventory(context.session, report.host)
    seen = {inventory.upsert(reported) for reported in report.devices}
    held = {tuple(key) for key in held}
    for key, device in list(inventory.devices.items()):
        if key not in seen and device.driver_name not in failed_drivers:
            inventory.remove(key, key in held)
    _record(context, report.host, generation, None, details)
    return inventory.result(generation)


@main.writer
def apply_delta(context, host, changed, removed, base_generation,
                generation, details=None, held=()):
    """Apply only what changed since ``base_generation``.

    :param changed: ``report.Device`` objects added or changed.
    :param removed: device keys ``(cpid_type, cpid_info JSON)`` now gone.
    :param held: those of ``removed`` still allocated in Placement.
    :raises GenerationConflict: the host's stored generation is not
        ``base_generation``; nothing is written.
    """
    _record(context, host, generation, base_generation, details)
    inventory = _HostInventory(context.session, host)
    for reported in changed:
        inventory.upsert(reported)
    held = {tuple(key) for key in held}
    for key in removed:
        inventory.remove(tuple(key), tuple(key) in held)
    return inventory.result(generation)


def _record(context, host, generation, base_generation, details):
    details = details or {}
    service_queries.record_report(
        context, host, AGENT_BINARY, generation,
        base_generation=base_generation, version=details.get('version'),
        drivers=details.get('drivers'),
        available_drivers=details.get('available_drivers'),
        report_interval=details.get('report_interval'))


def _add_device(session, host, reported):
    status, reason = states.DEVICE_INACTIVE, None
    if reported.fault:
        status, reason = states.DEVICE_ERROR, UNHEALTHY + reported.fault
    device = models.Device(
        uuid=uuidutils.generate_uuid(), type=reported.type,
        vendor=reported.vendor, model=reported.model,
        std_board_info=_json(reported.std_board_info),
        vendor_board_info=_json(reported.vendor_board_info),
        hostname=host, status=status, status_reason=reason[:255]
        if reason else None, driver_name=reported.driver_name,
        services=_json(sorted(reported.services)))
    cpid = models.ControlpathID(
        uuid=uuidutils.generate_uuid(),
        cpid_type=reported.controlpath.cpid_type,
        cpid_info=_json(reported.controlpath.cpid_info))
    device.controlpath_ids.append(cpid)
    session.add(device)
    for dep in reported.deployables:
        device.deployables.append(_new_deployable(dep, cpid))
    LOG.info('Host %s: new %s device %s (%s)', host, reported.type,
             device.uuid, cpid.cpid_info)
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


def _update_device(device, reported):
    changed = _set(device, type=reported.type, vendor=reported.vendor,
                   model=reported.model,
                   std_board_info=_json(reported.std_board_info),
                   vendor_board_info=_json(reported.vendor_board_info),
                   driver_name=reported.driver_name,
                   services=_json(sorted(reported.services)))
    changed |= _update_health(device, reported.fault)
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


def _update_health(device, fault):
    """Status changes that follow what the driver says of health."""
    if device.status == states.DEVICE_LOST:
        # NOTE(inventory): a lost device that comes back starts over as
        # inactive; the operator decides when it is ready again.
        return _set(device, status=states.DEVICE_INACTIVE, status_reason=None)
    if fault:
        reason = (UNHEALTHY + fault)[:255]
        return _set(device, status=states.DEVICE_ERROR, status_reason=reason)
    if (device.status == states.DEVICE_ERROR and
            (device.status_reason or '').startswith(UNHEALTHY)):
        # NOTE(inventory): healthy again after a fault the driver reported;
        # an operator activates it again, as a new device.
        return _set(device, status=states.DEVICE_INACTIVE, status_reason=None)
    return False


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


def _remove_device(session, device, held=False):
    if held or any(_in_use(dep) for dep in device.deployables):
        if device.status == states.DEVICE_LOST:
            return False
        LOG.warning('Device %s on %s disappeared while in use; marking it '
                    'lost', device.uuid, device.hostname)
        device.status = states.DEVICE_LOST
        return True
    LOG.info('Device %s on %s disappeared; removing it', device.uuid,
             device.hostname)
    session.delete(device)
    return True
