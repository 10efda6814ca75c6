"""The REST API: a pecan app that reads and writes through objects."""
