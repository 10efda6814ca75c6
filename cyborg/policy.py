"""oslo.policy enforcement: the process's enforcer and the one check call."""

import sys

from oslo_log import log as logging
from oslo_policy import policy as oslo_policy

from cyborg import conf as cyborg_conf
from cyborg import exception
from cyborg import policies

LOG = logging.getLogger(__name__)
CONF = cyborg_conf.CONF

_ENFORCER = None

# Command-line options of ours that the oslopolicy-* tools pass through.
_CONFIG_FLAGS = ('--config-file', '--config-dir')


def init(conf=None, policy_file=None):
    """The process's enforcer, created with every default rule on first use.
    """
    global _ENFORCER
    if _ENFORCER is None:
        enforcer = oslo_policy.Enforcer(conf if conf is not None else CONF,
                                        policy_file=policy_file)
        enforcer.register_defaults(policies.list_rules())
        _ENFORCER = enforcer
    return _ENFORCER


def reset():
    """Forget the enforcer (tests; a changed policy file is reloaded anyway).
    """
    global _ENFORCER
    if _ENFORCER is not None:
        _ENFORCER.clear()
    _ENFORCER = None


def _config_args(argv):
    """Only our config-file options out of an oslopolicy tool's argv."""
    picked = []
    args = iter(argv)
    for arg in args:
        name, sep, _value = arg.partition('=')
        if name not in _CONFIG_FLAGS:
            continue
        if sep:
            picked.append(arg)
        else:
            value = next(args, None)
            if value is not None:
                picked.extend((arg, value))
    return picked


def get_enforcer():
    """The ``oslo.policy.enforcer`` entry point of the oslopolicy-* tools.

    They run in their own process: read the configuration files their
    command line names, so policy_file and overrides are the deployment's.
    """
    # NOTE(policy): the tools' own options (--namespace, --output-file...)
    # are not ours; parsing them would fail, so pass only the config ones.
    CONF(_config_args(sys.argv[1:]), project='cyborg')
    return init()


def caller_target(context):
    """The target of every Cyborg rule: the caller's own project and user.
    """
    return {'project_id': context.project_id, 'user_id': context.user_id}


def authorize(rule, target, context):
    """Check ``rule`` for ``context``; raise Forbidden (403) if refused.

    :param target: a dict for the rule's %(...)s checks; None means the
        caller's own project and user (``caller_target``).
    """
    if target is None:
        target = caller_target(context)
    try:
        return init().authorize(rule, target, context, do_raise=True)
    except (oslo_policy.PolicyNotAuthorized, oslo_policy.InvalidScope):
        LOG.info('Policy %(rule)s refused for user %(user)s in project '
                 '%(project)s.', {'rule': rule, 'user': context.user_id,
                                  'project': context.project_id})
        raise exception.PolicyNotAuthorized(action=rule) from None
