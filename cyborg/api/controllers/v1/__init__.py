"""The original API of the specifications: /v1/accelerators."""

from pecan import rest

from cyborg.api.controllers.v1 import accelerators

VERSION_ID = 'v1'


class V1Controller(rest.RestController):
    """``/v1``: accelerators as assignable units, with attach and detach."""

    accelerators = accelerators.AcceleratorsController()
