"""Tests of the accelerator_ops OpenStackClient plugin (cyborg_cli)."""
