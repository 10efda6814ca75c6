"""Policies of the attributes API."""

from cyborg.policies import base

_RULES = [
    base.inventory_read_rule('cyborg:attribute:get_all',
                             'List attributes of deployables.',
                             '/v2/attributes'),
    base.inventory_read_rule('cyborg:attribute:get_one',
                             'Show an attribute.',
                             '/v2/attributes/{attribute_uuid}'),
    base.admin_action_rule(
        'cyborg:attribute:create',
        'Add an attribute to a deployable; a key starting with "trait" '
        'adds its value to the deployable\'s traits in Placement.', 'POST',
        '/v2/attributes'),
    base.admin_action_rule(
        'cyborg:attribute:delete',
        'Delete an attribute an operator added (and its trait).', 'DELETE',
        '/v2/attributes/{attribute_uuid}'),
]


def list_rules():
    return _RULES
