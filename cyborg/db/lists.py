"""The device and deployable lists as plain rows, in a few fixed SELECTs."""

import datetime
import json

import sqlalchemy as sa

from cyborg.db import api
from cyborg.db import models
from cyborg.db.session import main

#: The columns of a deployables row; ``attributes_list`` is one single-key
#: dict per attribute, in creation order.
DEPLOYABLE_FIELDS = ('uuid', 'parent_id', 'root_id', 'name',
                     'num_accelerators', 'device_id', 'rp_uuid',
                     'driver_name', 'bitstream_id', 'created_at',
                     'updated_at', 'attributes_list')
#: The columns of a devices row; ``services`` is a list.
DEVICE_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                 'vendor_board_info', 'hostname', 'status', 'status_reason',
                 'services', 'created_at', 'updated_at')
_TIMES = ('created_at', 'updated_at')

#: The tables each list is read from.
TABLES = {'deployables': (models.Deployable, models.Attribute),
          'devices': (models.Device,)}


def _text(value):
    """A stored time as ISO 8601 text in UTC, whole seconds."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value.replace(microsecond=0).isoformat()


def _columns(model, fields):
    return [getattr(model, name) for name in fields]


def _rows(found, fields):
    times = [fields.index(name) for name in _TIMES]
    rows = []
    for row in found:
        row = list(row)
        for index in times:
            row[index] = _text(row[index])
        rows.append(row)
    return rows


@main.reader
def deployables(context, **query):
    """``DEPLOYABLE_FIELDS`` rows of the deployables ``query`` (the filters
    and paging of ``Resource.list``) selects: two SELECTs, three with a
    marker, whatever the number of rows."""
    model = models.Deployable
    page = api.deployables.paged(
        context, context.session.query(
            model.id, *_columns(model, DEPLOYABLE_FIELDS[:-1])), **query)
    found = page.all()
    # NOTE(db): the page's ids as a derived table, not an IN list, so that
    # the attributes come in one SELECT however long the list is.
    ids = page.with_entities(model.id).subquery()
    attr = models.Attribute
    attributes = {}
    for dep_id, key, value in context.session.execute(
            sa.select(attr.deployable_id, attr.key, attr.value)
            .join(ids, attr.deployable_id == ids.c.id).order_by(attr.id)):
        attributes.setdefault(dep_id, []).append({key: value})
    rows = _rows((row[1:] for row in found), DEPLOYABLE_FIELDS[:-1])
    for row, (dep_id, *_rest) in zip(rows, found, strict=True):
        row.append(attributes.get(dep_id, []))
    return rows


@main.reader
def devices(context, **query):
    """``DEVICE_FIELDS`` rows of the devices ``query`` selects: one SELECT,
    two with a marker."""
    model = models.Device
    found = api.devices.paged(
        context, context.session.query(*_columns(model, DEVICE_FIELDS)),
        **query).all()
    rows = _rows(found, DEVICE_FIELDS)
    services = DEVICE_FIELDS.index('services')
    for row in rows:
        row[services] = json.loads(row[services]) if row[services] else []
    return rows


@main.reader
def fingerprint(context, tables):
    """What changes with any insert or delete in ``tables`` and any update
    of a row's ``updated_at`` (to the second): their row counts, highest
    ids and the sums of their update times, in one SELECT."""
    dialect = context.session.get_bind().dialect.name
    parts = []
    for model in tables:
        parts += [
            sa.select(sa.func.count(model.id)).scalar_subquery(),
            sa.select(sa.func.max(model.id)).scalar_subquery(),
            sa.select(sa.func.sum(_seconds(model.updated_at, dialect)))
            .scalar_subquery()]
    return tuple(context.session.execute(sa.select(*parts)).one())


def _seconds(column, dialect):
    """A stored time as a number: a sum of them is exact, where a maximum
    would miss an update that is not the latest one."""
    if dialect == 'mysql':
        return sa.func.unix_timestamp(column)
    if dialect == 'postgresql':
        return sa.extract('epoch', column)
    return sa.cast(sa.func.julianday(column) * 86400000, sa.BigInteger)
