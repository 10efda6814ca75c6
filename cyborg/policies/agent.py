"""Policies of the agents API."""

from cyborg.policies import base

_RULES = [
    base.inventory_read_rule('cyborg:agent:get_all',
                             'List the agents and their liveness.',
                             '/v2/agents'),
]


def list_rules():
    return _RULES
