"""Policies of the original /v1/accelerators API."""

from cyborg.policies import base

_ONE = '/v1/accelerators/{accelerator_uuid}'
#: The rule that shows the attachments of every project in full.
ALL_PROJECTS = 'cyborg:accelerator:all_projects'

_RULES = [
    base.rule('cyborg:accelerator:get_all', base.PROJECT_MANAGER_OR_ADMIN,
              'List accelerators (assignable units).',
              [{'method': 'GET', 'path': '/v1/accelerators'}]),
    base.rule('cyborg:accelerator:get_one', base.PROJECT_MANAGER_OR_ADMIN,
              'Show an accelerator.', [{'method': 'GET', 'path': _ONE}]),
    base.admin_action_rule(
        'cyborg:accelerator:create',
        'Record an accelerator no agent discovers (a remote or standalone '
        'one).', 'POST', '/v1/accelerators'),
    base.admin_action_rule(
        'cyborg:accelerator:update_spec', 'Update the spec of an '
        'accelerator.', 'PUT', _ONE + '/{acc_spec}'),
    base.rule('cyborg:accelerator:attach_instance',
              base.PROJECT_MANAGER_OR_ADMIN,
              'Attach an accelerator to an instance of the project (the '
              'whole accelerator is then the instance\'s).',
              [{'method': 'PUT', 'path': _ONE}]),
    base.admin_action_rule(
        'cyborg:accelerator:attach_host',
        'Attach an accelerator to a host, for the host\'s own use.', 'PUT',
        _ONE),
    base.rule('cyborg:accelerator:detach', base.PROJECT_MANAGER_OR_ADMIN,
              'Detach an accelerator (an instance attach: the project that '
              'made it; a host attach: administrators).',
              [{'method': 'DELETE', 'path': _ONE}]),
    base.rule(ALL_PROJECTS, 'rule:%s' % base.ADMIN_RULE,
              'See which instance, accelerator request and project hold '
              'every accelerator; the others see those of their own '
              'project, and only that the others are in use.',
              [{'method': 'GET', 'path': '/v1/accelerators'},
               {'method': 'GET', 'path': _ONE}]),
]


def list_rules():
    return _RULES
