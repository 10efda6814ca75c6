"""Policies of the deployables API."""

from cyborg.policies import base

_RULES = [
    base.inventory_read_rule('cyborg:deployable:get_all',
                             'List deployables.', '/v2/deployables'),
    base.inventory_read_rule('cyborg:deployable:get_one',
                             'Show a deployable.',
                             '/v2/deployables/{deployable_uuid}'),
]


def list_rules():
    return _RULES
