"""Policies of the deployables API."""

from cyborg.policies import base

_RULES = [
    base.inventory_read_rule('cyborg:deployable:get_all',
                             'List deployables.', '/v2/deployables'),
    base.inventory_read_rule('cyborg:deployable:get_one',
                             'Show a deployable.',
                             '/v2/deployables/{deployable_uuid}'),
    base.admin_action_rule(
        'cyborg:deployable:program',
        'Program a deployable with a Glance image (an FPGA bitstream); '
        'refused while instances use it.', 'PATCH',
        '/v2/deployables/{deployable_uuid}/program'),
]


def list_rules():
    return _RULES
