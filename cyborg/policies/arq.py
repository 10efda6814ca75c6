"""Policies of the accelerator requests API."""

from cyborg.policies import base

_REASON = ('Accelerator requests belong to projects; Nova acts on them with '
           'a service role.')
_COLLECTION = '/v2/accelerator_requests'
_ONE = '/v2/accelerator_requests/{accelerator_request_uuid}'


def _rule(name, check_str, description, operations,
          deprecated='rule:admin_or_owner'):
    return base.project_rule(name, check_str, description, operations,
                             deprecated, _REASON)


_RULES = [
    _rule('cyborg:arq:get_all', base.PROJECT_READER_OR_ADMIN,
          'List accelerator requests (of the caller\'s project unless '
          'admin).', [{'method': 'GET', 'path': _COLLECTION}]),
    _rule('cyborg:arq:get_one', base.PROJECT_READER_OR_ADMIN,
          'Show an accelerator request.', [{'method': 'GET', 'path': _ONE}]),
    _rule('cyborg:arq:create', base.PROJECT_MEMBER_OR_SERVICE,
          'Create accelerator requests from a device profile.',
          [{'method': 'POST', 'path': _COLLECTION}],
          deprecated=base.PROJECT_MEMBER_OR_ADMIN),
    _rule('cyborg:arq:update', base.PROJECT_MEMBER_OR_SERVICE,
          'Bind or unbind accelerator requests (also needs a service '
          'token, see [api] binding_service_roles).',
          [{'method': 'PATCH', 'path': _COLLECTION}]),
    _rule('cyborg:arq:delete', base.PROJECT_MEMBER_OR_SERVICE,
          'Delete accelerator requests (bound ones, and all of an '
          'instance\'s, also need a service token).',
          [{'method': 'DELETE', 'path': _COLLECTION + '?arqs={uuids}'},
           {'method': 'DELETE', 'path': _COLLECTION + '?instance={uuid}'}]),
]


def list_rules():
    return _RULES
