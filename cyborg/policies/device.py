"""Policies of the devices API."""

from oslo_policy import policy

from cyborg.policies import base

_RULES = [
    policy.DocumentedRuleDefault(
        name='cyborg:device:activate',
        check_str=base.ADMIN_API,
        description='Activate an inactive device: the agent runs the '
                    'driver\'s install step and the device becomes ready.',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/activate'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='cyborg:device:enable',
        check_str=base.ADMIN_API,
        description='Enable a device: end its maintenance, or activate it '
                    'when it is inactive.',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/enable'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='cyborg:device:disable',
        check_str=base.ADMIN_API,
        description='Disable a device: put it in maintenance.',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/disable'}],
        scope_types=['project']),
    base.inventory_read_rule('cyborg:device:get_all', 'List devices.',
                             '/v2/devices'),
    base.inventory_read_rule('cyborg:device:get_one', 'Show a device.',
                             '/v2/devices/{device_uuid}'),
]


def list_rules():
    return _RULES
