"""The conductor: the only process that owns the database."""
