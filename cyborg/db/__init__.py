"""Cyborg's database layer; only the conductor (and admin tools) import it."""
