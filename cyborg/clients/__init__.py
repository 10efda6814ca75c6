"""Clients of other OpenStack services, one module per service."""
