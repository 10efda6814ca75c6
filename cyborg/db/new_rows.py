"""A report's new devices, written with one multi-row INSERT per table."""

import json
import types

from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.db import models
from cyborg.drivers import report as driver_report

LOG = logging.getLogger(__name__)

# NOTE(inventory): a bootstorm adds tens of thousands of devices, each with
# a control path, deployables, attributes and handles; as ORM objects their
# construction and the unit of work's flush cost the conductor most of its
# CPU. Plain rows inserted by table cost a fraction of that.

_DEVICE = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
           'vendor_board_info', 'hostname', 'status', 'status_reason',
           'driver_name', 'services', 'health', 'health_reason',
           'health_sources', 'health_since', 'resume_status', 'mode',
           'modes', 'offer_reason')
_CPID = ('uuid', 'device_id', 'cpid_type', 'cpid_info')
_DEPLOYABLE = ('uuid', 'name', 'num_accelerators', 'device_id',
               'driver_name', 'rp_uuid')
_ATTRIBUTE = ('deployable_id', 'uuid', 'key', 'value')
_HANDLE = ('uuid', 'deployable_id', 'cpid_id', 'attach_type', 'attach_info',
           'in_use')


def _json(value):
    return json.dumps(value, sort_keys=True)


def modes_json(modes):
    """The ``modes`` column of a device: NULL for one without modes."""
    return _json(sorted(modes)) if modes else None


def device(host, reported, status, reason):
    """A new device as the rows it will be: attributes named as the
    columns, ``deployables`` with their ``attributes`` and
    ``attach_handles``, read as the ORM rows of a stored device are."""
    cpid = types.SimpleNamespace(
        uuid=uuidutils.generate_uuid(), device_id=None,
        cpid_type=reported.controlpath.cpid_type,
        cpid_info=_json(reported.controlpath.cpid_info))
    found = types.SimpleNamespace(
        uuid=uuidutils.generate_uuid(), type=reported.type,
        vendor=reported.vendor, model=reported.model,
        std_board_info=_json(reported.std_board_info),
        vendor_board_info=_json(reported.vendor_board_info),
        hostname=host, status=status,
        status_reason=reason[:255] if reason else None,
        driver_name=reported.driver_name,
        services=_json(sorted(reported.services)), health=None,
        health_reason=None, health_sources=None, health_since=None,
        health_flaps=None, health_flaps_since=None, resume_status=None,
        mode=reported.mode, modes=modes_json(reported.modes),
        offer_reason=reported.offer_reason, controlpath_ids=[cpid],
        deployables=[deployable(dep, cpid) for dep in reported.deployables])
    return found


def deployable(dep, cpid):
    return types.SimpleNamespace(
        uuid=uuidutils.generate_uuid(), name=dep.name,
        num_accelerators=dep.num_accelerators, device_id=None,
        driver_name=dep.driver_name,
        rp_uuid=driver_report.provider_uuid(dep.name), accelerator=None,
        attributes=[types.SimpleNamespace(
            uuid=uuidutils.generate_uuid(), deployable_id=None, key=key,
            value=value) for key, value in dep.attributes().items()],
        attach_handles=[types.SimpleNamespace(
            uuid=uuidutils.generate_uuid(), deployable_id=None,
            cpid_id=None, cpid=cpid, attach_type=handle.attach_type,
            attach_info=_json(handle.attach_info), in_use=handle.in_use)
            for handle in dep.attach_handles])


def is_new(row):
    """Whether ``row`` is one of these, not yet in the database."""
    return isinstance(row, types.SimpleNamespace)


def insert(session, devices):
    """Insert ``devices`` (made by ``device``) and everything under them:
    one INSERT per table (and, without RETURNING, one SELECT for the ids
    of each parent table).
    """
    if not devices:
        return
    hosts = {}
    for dev in devices:
        hosts.setdefault(dev.hostname, []).append(dev)
    # NOTE(inventory): one line per host: in a bootstorm, a line per device
    # cost the conductor a tenth of its CPU time.
    for host, found in hosts.items():
        LOG.info('Host %s: %d new devices: %s', host, len(found), ', '.join(
            '%s %s %s' % (dev.type, dev.uuid, dev.controlpath_ids[0].cpid_info)
            for dev in found))
    ids = _insert(session, models.Device, _DEVICE, devices)
    cpids = [cpid for dev in devices for cpid in dev.controlpath_ids]
    deps = [dep for dev in devices for dep in dev.deployables]
    for dev in devices:
        for child in dev.controlpath_ids + dev.deployables:
            child.device_id = ids[dev.uuid]
    cpid_ids = _insert(session, models.ControlpathID, _CPID, cpids)
    dep_ids = _insert(session, models.Deployable, _DEPLOYABLE, deps)
    attributes, handles = [], []
    for dep in deps:
        for attr in dep.attributes:
            attr.deployable_id = dep_ids[dep.uuid]
            attributes.append(attr)
        for handle in dep.attach_handles:
            handle.deployable_id = dep_ids[dep.uuid]
            handle.cpid_id = cpid_ids[handle.cpid.uuid]
            handles.append(handle)
    _insert(session, models.Attribute, _ATTRIBUTE, attributes, ids=False)
    _insert(session, models.AttachHandle, _HANDLE, handles, ids=False)


def _insert(session, model, columns, rows, ids=True):
    """INSERT ``rows``; ``{uuid: id}`` of them when ``ids``: from RETURNING
    where the database has it (PostgreSQL, SQLite, MariaDB), else read back
    by uuid (MySQL)."""
    if not rows:
        return {}
    values = [{name: getattr(row, name) for name in columns}
              for row in rows]
    stmt = sa.insert(model.__table__)
    if not ids:
        session.execute(stmt, values)
        return None
    if session.get_bind().dialect.insert_executemany_returning:
        table = model.__table__
        return dict(session.execute(
            stmt.returning(table.c.uuid, table.c.id), values).all())
    session.execute(stmt, values)
    return dict(session.execute(
        sa.select(model.uuid, model.id)
        .where(model.uuid.in_([row.uuid for row in rows]))).all())
