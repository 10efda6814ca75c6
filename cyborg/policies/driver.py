"""Policies of the driver and service operations (microversion 2.5)."""

from cyborg.policies import base

_ONE = '/v2/drivers/{host}/{name}'

_RULES = [
    base.rule('cyborg:driver:get_all', base.PROJECT_MANAGER_OR_ADMIN,
              'List the drivers of each agent, enabled or not.',
              [{'method': 'GET', 'path': '/v2/drivers'}]),
    base.admin_action_rule(
        'cyborg:driver:install', 'Install and enable a driver on a host.',
        'POST', '/v2/drivers'),
    base.admin_action_rule(
        'cyborg:driver:uninstall', 'Uninstall a driver from a host; refused '
        'while its devices are bound or attached.', 'DELETE', _ONE),
    base.admin_action_rule(
        'cyborg:driver:update', 'Reload a driver\'s options, or load an '
        'image through it, on a host.', 'PATCH', _ONE),
    base.rule('cyborg:service:get_all', base.PROJECT_MANAGER_OR_ADMIN,
              'List the services each device offers.',
              [{'method': 'GET', 'path': '/v2/services'}]),
    base.admin_action_rule(
        'cyborg:service:discover', 'Have one agent, or every agent, '
        'discover now.', 'POST', '/v2/services/discover'),
]


def list_rules():
    return _RULES
