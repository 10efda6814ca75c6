"""Policies of the devices API."""

from cyborg.policies import base

_ACTION_PATH = '/v2/devices/{device_uuid}/%s'

_RULES = [
    base.admin_action_rule(
        'cyborg:device:activate',
        'Activate an inactive device: the agent runs the driver\'s install '
        'step and the device becomes ready.', 'POST',
        _ACTION_PATH % 'activate'),
    base.admin_action_rule(
        'cyborg:device:enable',
        'Enable a device: end its maintenance, or activate it when it is '
        'inactive.', 'POST', _ACTION_PATH % 'enable'),
    base.admin_action_rule(
        'cyborg:device:disable', 'Disable a device: put it in maintenance.',
        'POST', _ACTION_PATH % 'disable'),
    base.admin_action_rule(
        'cyborg:device:drain',
        'Drain a device: no new bind; it is in maintenance once its bound '
        'accelerator requests have unbound (microversion 2.6).', 'POST',
        _ACTION_PATH % 'drain'),
    base.admin_action_rule(
        'cyborg:device:set_mode',
        'Switch a device to another of the partition modes it offers, once '
        'nothing is bound to it (microversion 2.9).', 'POST',
        _ACTION_PATH % 'mode'),
    base.inventory_read_rule('cyborg:device:get_all', 'List devices.',
                             '/v2/devices'),
    base.inventory_read_rule('cyborg:device:get_one', 'Show a device.',
                             '/v2/devices/{device_uuid}'),
    base.inventory_read_rule(
        'cyborg:device:get_metrics',
        'Show the latest telemetry sample of a device, which its agent '
        'takes on request (microversion 2.6).',
        '/v2/devices/{device_uuid}/metrics'),
]


def list_rules():
    return _RULES
