"""Create/read/update/delete of one model, shared by the per-resource modules.
"""

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import utils as db_utils
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import session
from cyborg.db.session import main


class Resource:
    """Queries on one model, keyed by uuid; loads the listed relationships
    with one extra SELECT each (never one per row)."""

    def __init__(self, model, not_found, eager=(), name=None):
        self.model = model
        self.not_found = not_found
        self.eager = tuple(eager)
        self.name = name or model.__tablename__

    def _select(self):
        stmt = sa.select(self.model)
        for rel in self.eager:
            stmt = stmt.options(sa.orm.selectinload(rel))
        return stmt

    @main.reader
    def get(self, context, uuid):
        row = context.session.scalars(
            self._select().where(self.model.uuid == uuid)).first()
        if row is None:
            raise self.not_found(uuid=uuid)
        return row

    @main.reader
    def get_by_id(self, context, id_):
        row = context.session.scalars(
            self._select().where(self.model.id == id_)).first()
        if row is None:
            raise self.not_found(uuid=id_)
        return row

    @main.reader
    def list(self, context, filters=None, limit=None, marker=None,
             sort_key='id', sort_dir='asc'):
        """Rows matching equality filters (a list value means IN)."""
        query = context.session.query(self.model)
        for rel in self.eager:
            query = query.options(sa.orm.selectinload(rel))
        return self.paged(context, query, filters=filters, limit=limit,
                          marker=marker, sort_key=sort_key,
                          sort_dir=sort_dir).all()

    def paged(self, context, query, filters=None, limit=None, marker=None,
              sort_key='id', sort_dir='asc'):
        """``query`` (of the model or of some of its columns) narrowed by
        equality filters, sorted and cut to one page as ``list`` is; inside
        a reader."""
        for column, value in (filters or {}).items():
            attr = getattr(self.model, column)
            if isinstance(value, (list, tuple, set, frozenset)):
                query = query.filter(attr.in_(list(value)))
            else:
                query = query.filter(attr == value)
        marker_row = None
        if marker is not None:
            marker_row = context.session.scalars(
                sa.select(self.model).where(self.model.uuid == marker)).first()
            if marker_row is None:
                raise exception.InvalidParameterValue(
                    err='Marker %s was not found.' % marker)
        sort_keys = [sort_key] if sort_key == 'id' else [sort_key, 'id']
        return db_utils.paginate_query(
            query, self.model, limit, sort_keys, marker=marker_row,
            sort_dir=sort_dir)

    @session.retry_on_conflict
    @main.writer
    def create(self, context, values):
        values = dict(values)
        values.setdefault('uuid', uuidutils.generate_uuid())
        row = self.model(**values)
        context.session.add(row)
        self._flush(context)
        return self._reload(context, row)

    @session.retry_on_conflict
    @main.writer
    def update(self, context, uuid, values):
        row = context.session.scalars(
            sa.select(self.model).where(self.model.uuid == uuid)
            .with_for_update()).first()
        if row is None:
            raise self.not_found(uuid=uuid)
        for key, value in values.items():
            setattr(row, key, value)
        self._flush(context)
        return self._reload(context, row)

    def _flush(self, context):
        try:
            context.session.flush()
        except db_exc.DBDuplicateEntry as exc:
            raise exception.DuplicateEntry(
                resource=self.name, columns=', '.join(exc.columns or []),
                value=exc.value or '') from exc

    def _reload(self, context, row):
        # NOTE(db): callers read the row after the session closes, so the
        # eager relationships must be loaded before it does.
        if self.eager:
            context.session.refresh(row, [rel.key for rel in self.eager])
        return row

    @session.retry_on_conflict
    @main.writer
    def destroy(self, context, uuid):
        try:
            count = context.session.execute(
                sa.delete(self.model).where(self.model.uuid == uuid)
            ).rowcount
        except db_exc.DBReferenceError as exc:
            raise exception.ResourceInUse(resource=self.name,
                                          uuid=uuid) from exc
        if not count:
            raise self.not_found(uuid=uuid)
