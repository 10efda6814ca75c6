"""Seeing on the engine the writes to the listed tables (for list caches).
"""

import sqlalchemy as sa

from cyborg.db import lists
from cyborg.db import session

#: The tables the cached lists are read from.
WATCHED = frozenset(model.__tablename__ for tables in lists.TABLES.values()
                    for model in tables)
_DML = ('INSERT', 'UPDATE', 'DELETE', 'REPLACE')


def listen(engine, executed, committing, returned):
    """Call ``executed`` after each statement ``engine`` runs,
    ``committing`` at each commit and ``returned`` as a connection goes back
    to the pool (SQLAlchemy's after_cursor_execute, commit, checkin)."""
    sa.event.listen(engine, 'after_cursor_execute', executed)
    sa.event.listen(engine, 'commit', committing)
    sa.event.listen(engine, 'checkin', returned)


def writes_listed(statement, context):
    """Whether an executed statement may change a watched table."""
    compiled = getattr(context, 'compiled', None)
    if compiled is not None and (context.isinsert or context.isupdate or
                                 context.isdelete):
        table = getattr(compiled.statement, 'table', None)
        return getattr(table, 'name', None) in WATCHED
    # NOTE(cache): plain SQL text: any write may touch the lists.
    return statement.lstrip()[:7].upper().startswith(_DML)


def changed_rows(cursor):
    """Whether a write may have changed rows: not when the driver says it
    matched none (a periodic UPDATE with nothing to do)."""
    return getattr(cursor, 'rowcount', -1) != 0


def engine():
    """The conductor's engine (started on first use)."""
    return session.get_engine()


def on_engine_create(callback):
    """Call ``callback(engine)`` once the conductor's engine starts."""
    session.main.append_on_engine_create(callback)
