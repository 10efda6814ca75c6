"""Unit tests of the REST API."""
