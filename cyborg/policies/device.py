"""Policies of the devices API."""

from cyborg.policies import base

_RULES = [
    base.inventory_read_rule('cyborg:device:get_all', 'List devices.',
                             '/v2/devices'),
    base.inventory_read_rule('cyborg:device:get_one', 'Show a device.',
                             '/v2/devices/{device_uuid}'),
]


def list_rules():
    return _RULES
