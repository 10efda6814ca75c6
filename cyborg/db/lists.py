"""The device and deployable lists as the JSON text of their rows, in a few
fixed SELECTs, encoded as the rows stream in."""

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
                     'updated_at', 'cleaning_since', 'attributes_list')
#: The columns of a devices row; ``services``, ``health_sources`` and
#: ``modes`` are lists.
DEVICE_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                 'vendor_board_info', 'hostname', 'status', 'status_reason',
                 'services', 'created_at', 'updated_at', 'health',
                 'health_reason', 'health_sources', 'mode', 'modes',
                 'offer_reason')
_TIMES = ('created_at', 'updated_at', 'cleaning_since')

#: The tables each list is read from.
TABLES = {'deployables': (models.Deployable, models.Attribute),
          'devices': (models.Device,)}


#: Rows read and encoded at a time: a list is never held as Python rows,
#: only as the JSON text it becomes.
BATCH = 1000


def _text(value):
    """A stored time as ISO 8601 text in UTC, whole seconds."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value.replace(microsecond=0).isoformat()


def _columns(context, model, fields):
    """(the columns of ``fields``, the indexes of the times still to turn
    into ``_text``): the database writes them where it can, which spares
    making a datetime of each and text of it again."""
    dialect = context.session.get_bind().dialect.name
    columns, times = [], []
    for index, name in enumerate(fields):
        column = getattr(model, name)
        if name in _TIMES:
            text = _time_text(column, dialect)
            if text is None:
                times.append(index)
            else:
                column = text.label(name)
        columns.append(column)
    return columns, times


def _time_text(column, dialect):
    """``_text`` of a stored time, written by the database; None where it
    is left to ``_text``. Times are stored naive, in UTC."""
    if getattr(column.type, 'timezone', False):
        return None
    if dialect == 'mysql':
        return sa.func.date_format(column, '%Y-%m-%dT%H:%i:%s')
    if dialect == 'postgresql':
        return sa.func.to_char(column, 'YYYY-MM-DD"T"HH24:MI:SS')
    if dialect == 'sqlite':
        return sa.func.strftime('%Y-%m-%dT%H:%M:%S', column)
    return None


def _streamed(context, query):
    """The rows ``query`` selects, ``BATCH`` at a time, as they come from
    the database (a server-side cursor where the driver has one)."""
    # NOTE(db): nothing else may run on the connection until every row is
    # read: with PyMySQL's unbuffered cursor the rest of the result would
    # be in the way.
    with context.session.execute(
            query, execution_options={'yield_per': BATCH}) as result:
        yield from result.partitions()


def _timed(rows, times):
    """``rows`` as lists, the values at the indexes ``times`` as ``_text``.
    """
    done = []
    for row in rows:
        row = list(row)
        for index in times:
            row[index] = _text(row[index])
        done.append(row)
    return done


def _array(parts):
    """``json.dumps`` of a list from the texts of its items (or of runs of
    them): the same separators, one copy of the text at the end."""
    texts = ['[']
    for part in parts:
        if len(texts) > 1:
            texts.append(', ')
        texts.append(part)
    texts.append(']')
    return ''.join(texts)


@main.reader
def deployables(context, **query):
    """``DEPLOYABLE_FIELDS`` rows of the deployables ``query`` (the filters
    and paging of ``Resource.list``) selects, as the JSON text of a list of
    them (``json.dumps`` of the rows): two SELECTs, three with a marker,
    whatever the number of rows."""
    model = models.Deployable
    columns, times = _columns(context, model, DEPLOYABLE_FIELDS[:-1])
    page = api.deployables.paged(
        context, context.session.query(model.id, *columns), **query)
    # NOTE(db): the page's ids as a derived table, not an IN list, so that
    # the attributes come in one SELECT however long the list is; read
    # first, so that the rows can be encoded as they come.
    attributes = _attribute_texts(
        context, page.with_entities(model.id).subquery())
    empty = json.dumps([])

    def encoded():
        for found in _streamed(context, page.statement):
            for row, (dep_id, *_rest) in zip(
                    _timed((row[1:] for row in found), times), found,
                    strict=True):
                # NOTE(db): the row but its last column, whose text is
                # already there: '[..., "<cleaning_since>"' + ', [{...}]]'.
                yield '%s, %s]' % (json.dumps(row)[:-1],
                                   attributes.get(dep_id, empty))

    return _array(encoded())


def _attribute_texts(context, ids):
    """{deployable id: JSON text of its attributes, one single-key dict
    each in creation order} of the deployables whose ids ``ids`` selects;
    equal texts are one string."""
    attr = models.Attribute
    texts, shared = {}, {}

    def add(dep_id, pairs):
        text = json.dumps([{key: value} for key, value in pairs])
        texts[dep_id] = shared.setdefault(text, text)

    current, pairs = None, []
    for found in _streamed(
            context, sa.select(attr.deployable_id, attr.key, attr.value)
            .join(ids, attr.deployable_id == ids.c.id)
            .order_by(attr.deployable_id, attr.id)):
        for dep_id, key, value in found:
            if dep_id != current:
                if pairs:
                    add(current, pairs)
                current, pairs = dep_id, []
            pairs.append((key, value))
    if pairs:
        add(current, pairs)
    return texts


@main.reader
def devices(context, **query):
    """``DEVICE_FIELDS`` rows of the devices ``query`` selects, as the JSON
    text of a list of them: one SELECT, two with a marker."""
    model = models.Device
    columns, times = _columns(context, model, DEVICE_FIELDS)
    page = api.devices.paged(context, context.session.query(*columns),
                             **query)
    lists = [DEVICE_FIELDS.index('services'),
             DEVICE_FIELDS.index('health_sources'),
             DEVICE_FIELDS.index('modes')]
    parsed = {}

    def encoded():
        for found in _streamed(context, page.statement):
            rows = _timed(found, times)
            for row in rows:
                for index in lists:
                    text = row[index]
                    if not text:
                        row[index] = []
                        continue
                    # NOTE(db): most devices offer the same services and
                    # ran the same checks; each text is parsed once (and
                    # the memo kept small).
                    if text not in parsed:
                        if len(parsed) >= BATCH:
                            parsed.clear()
                        parsed[text] = json.loads(text)
                    row[index] = parsed[text]
            # NOTE(db): a run of rows, without its brackets, is what
            # json.dumps writes for them inside the whole list.
            yield json.dumps(rows)[1:-1]

    return _array(text for text in encoded() if text)


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
