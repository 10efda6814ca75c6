"""Queries on the drivers agents run and the devices they discovered."""

import json

import sqlalchemy as sa

from cyborg import exception
from cyborg import states
from cyborg.db import models
from cyborg.db import services as service_queries
from cyborg.db.session import main

AGENT_BINARY = service_queries.AGENT_BINARY


def _agents(session, host=None):
    stmt = sa.select(models.Service).where(
        models.Service.binary == AGENT_BINARY).order_by(models.Service.host)
    if host is not None:
        stmt = stmt.where(models.Service.host == host)
    agents = session.scalars(stmt).all()
    if host is not None and not agents:
        raise exception.AgentNotFound(host=host)
    return agents


def _loads(value, default):
    try:
        return json.loads(value) if value else default
    except ValueError:
        return default


def _entries(agent, counts):
    enabled = set(_loads(agent.drivers, []))
    catalogue = _loads(agent.available_drivers, [])
    known = {entry['name'] for entry in catalogue}
    # NOTE(drivers): an agent older than the catalogue only said which
    # drivers it runs; list those all the same.
    catalogue += [{'name': name, 'driver_name': name, 'version': ''}
                  for name in sorted(enabled - known)]
    return [{'host': agent.host, 'name': entry['name'],
             'driver_name': entry['driver_name'],
             'version': entry.get('version') or '',
             'enabled': entry['name'] in enabled,
             'device_count': counts.get((agent.host, entry['driver_name']), 0)
             if entry['name'] in enabled else 0}
            for entry in catalogue]


def _counts(session, host=None):
    stmt = (sa.select(models.Device.hostname, models.Device.driver_name,
                      sa.func.count())
            .group_by(models.Device.hostname, models.Device.driver_name))
    if host is not None:
        stmt = stmt.where(models.Device.hostname == host)
    return {(h, d): n for h, d, n in session.execute(stmt)}


@main.reader
def list_drivers(context, host=None):
    """Every driver installed on each agent's host, enabled or not."""
    session = context.session
    counts = _counts(session, host)
    return [entry for agent in _agents(session, host)
            for entry in _entries(agent, counts)]


@main.reader
def driver_entry(context, host, name):
    """One driver of one host (by entry point or driver name)."""
    for entry in list_drivers(context, host):
        if name in (entry['name'], entry['driver_name']):
            return entry
    raise exception.DriverNotAvailable(
        name=name, host=host, available=', '.join(
            entry['name'] for entry in list_drivers(context, host)))


@main.reader
def check_host(context, host):
    _agents(context.session, host)


@main.reader
def bindings_of(context, host, driver_name):
    """What holds the driver's devices: bound ARQs and /v1 attachments."""
    session = context.session
    held = session.execute(
        sa.select(models.Deployable.name, models.AcceleratorRequest.uuid)
        .join(models.Device, models.Device.id == models.Deployable.device_id)
        .join(models.AcceleratorRequest,
              models.AcceleratorRequest.deployable_id ==
              models.Deployable.id)
        .where(models.Device.hostname == host,
               models.Device.driver_name == driver_name,
               models.AcceleratorRequest.state.in_(
                   states.ARQ_HOLDS_DEVICE))).all()
    attached = session.execute(
        sa.select(models.Deployable.name, models.Accelerator.attached_to)
        .join(models.Device, models.Device.id == models.Deployable.device_id)
        .join(models.Accelerator,
              models.Accelerator.deployable_id == models.Deployable.id)
        .where(models.Device.hostname == host,
               models.Device.driver_name == driver_name,
               models.Accelerator.attach_type.is_not(None))).all()
    found = (['%s: attached to %s' % tuple(row) for row in attached] +
             ['%s: ARQ %s' % tuple(row) for row in held])
    # NOTE(drivers): an instance attach shows as its attachment and its
    # ARQ; one line per deployable is enough to say what holds it.
    seen, unique = set(), []
    for line in found:
        name = line.split(':', 1)[0]
        if name not in seen:
            seen.add(name)
            unique.append(line)
    return unique


@main.reader
def snapshot(context, host):
    """Device uuid -> what discovery can change of it, for one host."""
    session = context.session
    found = {}
    devices = session.scalars(sa.select(models.Device).where(
        models.Device.hostname == host)).all()
    ids = {device.id: device.uuid for device in devices}
    deps = session.execute(
        sa.select(models.Deployable.device_id, models.Deployable.name,
                  models.Deployable.num_accelerators)
        .where(models.Deployable.device_id.in_(list(ids)))).all() \
        if ids else []
    by_device = {}
    for device_id, name, num in deps:
        by_device.setdefault(device_id, []).append((name, num))
    for device in devices:
        found[device.uuid] = (device.status, device.services or '[]',
                              sorted(by_device.get(device.id, ())))
    return found


@main.reader
def services(context, host=None, driver_name=None):
    """What each device offers, as its driver discovered it."""
    stmt = sa.select(models.Device).order_by(models.Device.hostname,
                                             models.Device.id)
    if host is not None:
        stmt = stmt.where(models.Device.hostname == host)
    if driver_name is not None:
        # NOTE(drivers): by driver name or entry point, as the driver
        # routes take either (fake or fake_driver).
        stmt = stmt.where(sa.or_(
            models.Device.driver_name == driver_name,
            models.Device.driver_name + '_driver' == driver_name))
    return [{'host': device.hostname, 'driver_name': device.driver_name,
             'device_uuid': device.uuid, 'device_type': device.type,
             'services': _loads(device.services, [])}
            for device in context.session.scalars(stmt)]


@main.reader
def agent_hosts(context):
    return [agent.host for agent in _agents(context.session)]
