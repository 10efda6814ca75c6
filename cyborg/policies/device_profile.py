"""Policies of the device profiles API."""

from cyborg.policies import base

_REASON = ('Device profiles are read by project readers and written by '
           'administrators, with project-scoped tokens.')
_COLLECTION = '/v2/device_profiles'
_ONE = '/v2/device_profiles/{device_profile_uuid}'


def _rule(name, check_str, deprecated, description, operations):
    return base.project_rule(name, check_str, description, operations,
                             deprecated, _REASON)


_RULES = [
    _rule('cyborg:device_profile:get_all', base.PROJECT_READER_OR_ADMIN,
          'rule:admin_or_owner', 'List device profiles.',
          [{'method': 'GET', 'path': _COLLECTION}]),
    _rule('cyborg:device_profile:get_one', base.PROJECT_READER_OR_ADMIN,
          'rule:admin_or_owner',
          'Show a device profile (by uuid, or by name from 2.2).',
          [{'method': 'GET', 'path': _ONE}]),
    _rule('cyborg:device_profile:create', base.ADMIN_API, 'rule:is_admin',
          'Create a device profile.',
          [{'method': 'POST', 'path': _COLLECTION}]),
    _rule('cyborg:device_profile:delete', base.ADMIN_API, 'rule:is_admin',
          'Delete device profiles (by uuid, or by names).',
          [{'method': 'DELETE', 'path': _ONE},
           {'method': 'DELETE', 'path': _COLLECTION + '?value={names}'}]),
    base.rule('cyborg:device_profile:candidates',
              base.PROJECT_MANAGER_OR_ADMIN,
              'List the deployables that could serve each group of a device '
              'profile, and why each one that cannot does not (microversion '
              '2.8); it shows hardware inventory, as device lists do.',
              [{'method': 'GET', 'path': _ONE + '/candidates'}]),
]


def list_rules():
    return _RULES
