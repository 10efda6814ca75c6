"""Counts the SQL statements an engine runs (tests and benchmarks)."""

import sqlalchemy as sa

WRITES = ('INSERT', 'UPDATE', 'DELETE')


class StatementCounter:
    """Records the verb of every statement run while the block runs."""

    def __init__(self, engine):
        self.engine = engine
        self.statements = []

    def __enter__(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._record)
        return self

    def __exit__(self, *exc):
        sa.event.remove(self.engine, 'before_cursor_execute', self._record)

    def _record(self, conn, cursor, statement, params, context, many):
        self.statements.append(statement.split(None, 1)[0].upper())

    @property
    def writes(self):
        return [verb for verb in self.statements if verb in WRITES]
