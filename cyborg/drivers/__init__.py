"""Accelerator drivers, loaded by the agent from the cyborg.accelerator.driver
entry point namespace."""

NAMESPACE = 'cyborg.accelerator.driver'
