"""Policies of the conductors API."""

from cyborg.policies import base

_RULES = [
    base.rule('cyborg:conductor:get_all', base.ADMIN_API,
              'List the conductors, their liveness and how far their '
              'clocks are from the database server\'s.',
              [{'method': 'GET', 'path': '/v2/conductors'}]),
]


def list_rules():
    return _RULES
