"""WSME types: what the API accepts and renders, one module per resource."""
