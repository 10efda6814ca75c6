"""Personas and the compound rules every resource's policy builds on."""

from oslo_policy import policy

# NOTE(policy): every rule is checked for the caller's own {project_id,
# user_id}, so project_id checks assert a project-scoped token. Which
# project's resources (accelerator requests, attachments) a caller reaches
# is a rule of its own per resource, "...:all_projects", administrators by
# default (cyborg.policy.scope).
ADMIN_RULE = 'context_is_admin'
ADMIN_API = 'rule:admin_api'
PROJECT_ADMIN_API = 'rule:project_admin_api'
PROJECT_MANAGER_API = 'rule:project_manager_api'
PROJECT_MEMBER_API = 'rule:project_member_api'
PROJECT_READER_API = 'rule:project_reader_api'
SERVICE_API = 'rule:service_api'
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
PROJECT_MANAGER_OR_ADMIN = 'rule:project_manager_or_admin'
PROJECT_MEMBER_OR_SERVICE = 'rule:project_member_or_service'

_LEGACY_REASON = ('Cyborg now uses the personas admin, manager, member, '
                  'reader and service with project-scoped tokens; this '
                  'legacy rule goes away with the deprecated defaults.')
_LEGACY_SINCE = 'Wallaby'

_PERSONAS = [
    policy.RuleDefault(ADMIN_RULE, 'role:admin',
                       description='Who is an administrator: the legacy '
                                   'rules\' is_admin:True checks read it.'),
    policy.RuleDefault('admin_api', 'role:admin',
                       description='An administrator.'),
    policy.RuleDefault('project_admin_api',
                       'role:admin and project_id:%(project_id)s',
                       description='An administrator of the project.'),
    policy.RuleDefault('project_manager_api',
                       'role:manager and project_id:%(project_id)s',
                       description='A manager of the project.'),
    policy.RuleDefault('project_member_api',
                       'role:member and project_id:%(project_id)s',
                       description='A member of the project.'),
    policy.RuleDefault('project_reader_api',
                       'role:reader and project_id:%(project_id)s',
                       description='A reader of the project.'),
    policy.RuleDefault('service_api', 'role:service',
                       description='Another OpenStack service (Nova) '
                                   'calling with a service role.'),
]

_COMPOUND = [
    policy.RuleDefault('project_member_or_admin',
                       'rule:project_member_api or rule:admin_api',
                       description='A project member or an administrator.'),
    policy.RuleDefault('project_reader_or_admin',
                       'rule:project_reader_api or rule:admin_api',
                       description='A project reader or an administrator.'),
    policy.RuleDefault('project_manager_or_admin',
                       'rule:project_manager_api or rule:admin_api',
                       description='A project manager or an '
                                   'administrator.'),
    policy.RuleDefault('project_member_or_service',
                       'rule:project_member_api or rule:service_api',
                       description='A project member or a service.'),
]


def _legacy(name, check_str, description):
    return policy.RuleDefault(name, check_str, description=description,
                              deprecated_for_removal=True,
                              deprecated_reason=_LEGACY_REASON,
                              deprecated_since=_LEGACY_SINCE)


_LEGACY = [
    _legacy('public_api', 'is_public_api:True',
            'Internal flag for routes open to anyone.'),
    _legacy('allow', '@', 'Anyone.'),
    _legacy('deny', '!', 'No one.'),
    # NOTE(policy): oslo.policy evaluates a reference to an undefined rule
    # (a typo in an override) as this one, so it must fail closed.
    policy.RuleDefault('default', ADMIN_API,
                       description='The rule of a policy that is not '
                                   'registered, and of any reference to an '
                                   'undefined rule: administrators only.'),
    _legacy('is_admin', 'rule:admin_api', 'An administrator.'),
    _legacy('admin_or_owner', 'is_admin:True or project_id:%(project_id)s',
            'An administrator or the owning project.'),
    _legacy('admin_or_user', 'is_admin:True or user_id:%(user_id)s',
            'An administrator or the owning user.'),
]


_INVENTORY_REASON = ('Hardware inventory (devices, deployables, attributes) '
                     'is for project managers and administrators, with a '
                     'project-scoped token; it was open to anyone before.')
_INVENTORY_SINCE = '2026.2'


def inventory_read_rule(name, description, path):
    """A GET of hardware inventory: project manager or admin.

    While ``[oslo_policy] enforce_new_defaults`` is False the old default,
    admin only, is OR'ed in.
    """
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=PROJECT_MANAGER_OR_ADMIN,
        description=description,
        operations=[{'method': 'GET', 'path': path}],
        scope_types=['project'],
        deprecated_rule=policy.DeprecatedRule(
            name, ADMIN_API, deprecated_reason=_INVENTORY_REASON,
            deprecated_since=_INVENTORY_SINCE))


def project_rule(name, check_str, description, operations, deprecated,
                 reason, since='Wallaby'):
    """A project-scoped rule that replaced ``deprecated`` (OR'ed in while
    ``[oslo_policy] enforce_new_defaults`` is False)."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=operations, scope_types=['project'],
        deprecated_rule=policy.DeprecatedRule(
            name, deprecated, deprecated_reason=reason,
            deprecated_since=since))


def rule(name, check_str, description, operations):
    """A project-scoped rule with no older default to honour."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=operations, scope_types=['project'])


def admin_action_rule(name, description, method, path):
    """An operation on hardware that only administrators may run."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=ADMIN_API, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


def list_rules():
    return _PERSONAS + _COMPOUND + _LEGACY
