"""Alembic environment and revisions of Cyborg's database schema."""
