"""What the explanation of a device profile reads: deployables and state."""

import sqlalchemy as sa

from cyborg.db import models
from cyborg.db.session import main


@main.reader
def deployables(context):
    """Every deployable with what judges it: a list of dicts with its
    ``uuid``, ``name``, ``rp_uuid``, ``num_accelerators``, ``cleaning``,
    ``resource_class`` (its ``rc`` attribute), and its device's ``device_
    uuid``, ``hostname``, ``status``, ``status_reason``, ``health`` and
    ``health_reason``; by host, then name."""
    dep = models.Deployable
    dev = models.Device
    rc = sa.select(models.Attribute.value).where(
        models.Attribute.deployable_id == dep.id,
        models.Attribute.key == 'rc').scalar_subquery()
    rows = context.session.execute(
        sa.select(dep.uuid, dep.name, dep.rp_uuid, dep.num_accelerators,
                  dep.cleaning_since, rc.label('rc'), dev.uuid, dev.hostname,
                  dev.status, dev.status_reason, dev.health,
                  dev.health_reason)
        .join(dev, dev.id == dep.device_id)
        .order_by(dev.hostname, dep.name)).all()
    return [{'uuid': row[0], 'name': row[1], 'rp_uuid': row[2],
             'num_accelerators': row[3], 'cleaning': row[4] is not None,
             'resource_class': row[5], 'device_uuid': row[6],
             'hostname': row[7], 'status': row[8], 'status_reason': row[9],
             'health': row[10], 'health_reason': row[11]}
            for row in rows]


@main.reader
def devices_offering_nothing(context):
    """The devices without a deployable: a list of dicts with their
    ``uuid``, ``hostname`` and ``offer_reason``; by host, then uuid."""
    dev = models.Device
    has_deployable = sa.exists().where(models.Deployable.device_id == dev.id)
    rows = context.session.execute(
        sa.select(dev.uuid, dev.hostname, dev.offer_reason)
        .where(~has_deployable)
        .order_by(dev.hostname, dev.uuid)).all()
    return [{'uuid': row[0], 'hostname': row[1], 'offer_reason': row[2]}
            for row in rows]
