"""Alembic revisions of Cyborg's database schema, oldest first."""
