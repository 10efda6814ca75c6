"""Policies of the accelerator requests API."""

from oslo_policy import policy

from cyborg import conf as cyborg_conf
from cyborg.policies import base

CONF = cyborg_conf.CONF

_REASON = ('Accelerator requests belong to projects; Nova acts on them with '
           'a service role.')
_COLLECTION = '/v2/accelerator_requests'
_ONE = '/v2/accelerator_requests/{accelerator_request_uuid}'

#: The rule a request must also pass to bind, unbind, or delete bound ARQs.
SERVICE_TOKEN = 'cyborg:arq:service_token'
#: The rule a bind must pass to move ARQs into another project (2.1).
SET_PROJECT = 'cyborg:arq:set_project'
#: The rule that lets a caller act on every project's ARQs.
ALL_PROJECTS = 'cyborg:arq:all_projects'


def _rule(name, check_str, description, operations,
          deprecated='rule:admin_or_owner'):
    return base.project_rule(name, check_str, description, operations,
                             deprecated, _REASON)


def service_token_check():
    """``service_roles:<role>`` for each of ``[api] binding_service_roles``,
    or ``@`` when ``[api] require_service_token`` is off.

    NOTE(policy): both options are deprecated for this rule; until they go,
    a deployment that set them keeps its behaviour through the default.
    """
    if not CONF.api.require_service_token:
        return '@'
    roles = [role.strip() for role in CONF.api.binding_service_roles
             if role.strip()]
    return ' or '.join('service_roles:%s' % role for role in roles) or '!'


def list_rules():
    return [
        _rule('cyborg:arq:get_all', base.PROJECT_READER_OR_ADMIN,
              'List accelerator requests (of the caller\'s project unless '
              'cyborg:arq:all_projects passes).',
              [{'method': 'GET', 'path': _COLLECTION}]),
        _rule('cyborg:arq:get_one', base.PROJECT_READER_OR_ADMIN,
              'Show an accelerator request.',
              [{'method': 'GET', 'path': _ONE}]),
        _rule('cyborg:arq:create', base.PROJECT_MEMBER_OR_SERVICE,
              'Create accelerator requests from a device profile.',
              [{'method': 'POST', 'path': _COLLECTION}],
              deprecated=base.PROJECT_MEMBER_OR_ADMIN),
        _rule('cyborg:arq:update', base.PROJECT_MEMBER_OR_SERVICE,
              'Bind or unbind accelerator requests (also needs '
              'cyborg:arq:service_token).',
              [{'method': 'PATCH', 'path': _COLLECTION}]),
        _rule('cyborg:arq:delete', base.PROJECT_MEMBER_OR_SERVICE,
              'Delete accelerator requests (bound ones, and all of an '
              'instance\'s, also need cyborg:arq:service_token).',
              [{'method': 'DELETE', 'path': _COLLECTION + '?arqs={uuids}'},
               {'method': 'DELETE',
                'path': _COLLECTION + '?instance={uuid}'}]),
        policy.DocumentedRuleDefault(
            name=SERVICE_TOKEN, check_str=service_token_check(),
            description='The request carries a service token (Nova sends '
                        'one with the user\'s token): needed to bind and '
                        'unbind, to delete the ARQs of an instance and to '
                        'delete bound ARQs, so that a tenant cannot take a '
                        'device from under Nova. keystonemiddleware\'s '
                        '[keystone_authtoken] service_token_roles must '
                        'name the roles this rule checks.',
            operations=[
                {'method': 'PATCH', 'path': _COLLECTION},
                {'method': 'DELETE',
                 'path': _COLLECTION + '?instance={uuid}'},
                {'method': 'DELETE', 'path': _COLLECTION + '?arqs={uuids}'}],
            scope_types=['project']),
        policy.DocumentedRuleDefault(
            name=ALL_PROJECTS, check_str='rule:%s' % base.ADMIN_RULE,
            description='Act on the accelerator requests of every project '
                        '(list, show, bind, unbind, delete); the others '
                        'act on their own project\'s only, and another '
                        'project\'s are not found (404).',
            operations=[
                {'method': 'GET', 'path': _COLLECTION},
                {'method': 'GET', 'path': _ONE},
                {'method': 'PATCH', 'path': _COLLECTION},
                {'method': 'DELETE', 'path': _COLLECTION + '?arqs={uuids}'},
                {'method': 'DELETE',
                 'path': _COLLECTION + '?instance={uuid}'}],
            scope_types=['project']),
        policy.DocumentedRuleDefault(
            name=SET_PROJECT, check_str=base.ADMIN_API,
            description='Bind accelerator requests into another project '
                        '(the /project_id path of a bind, microversion '
                        '2.1).',
            operations=[{'method': 'PATCH', 'path': _COLLECTION}],
            scope_types=['project']),
    ]
