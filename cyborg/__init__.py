"""Cyborg: accelerator management for OpenStack clouds."""
