"""oslo.policy: the process's enforcer and the checks handlers make."""

import os
import sys

from oslo_log import log as logging
from oslo_policy import _checks
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy
import yaml

from cyborg import conf as cyborg_conf
from cyborg import exception
from cyborg import policies

LOG = logging.getLogger(__name__)
CONF = cyborg_conf.CONF

_ENFORCER = None

# Command-line options of ours that the oslopolicy-* tools pass through.
_CONFIG_FLAGS = ('--config-file', '--config-dir')

#: The rule that makes a caller an administrator (context.is_admin).
ADMIN_RULE = 'context_is_admin'

#: What a target holds for a request of no project: no token has it.
_NO_PROJECT = '*none*'

# NOTE(policy): (path, mtime) of broken policy files already logged, so that
# one bad edit gives one ERROR, not one per request.
_REPORTED = set()


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
    _REPORTED.clear()


def policy_files(conf=None):
    """The policy files oslo.policy reads: ``[oslo_policy] policy_file``,
    then the files of each of ``policy_dirs``, each found as oslo.policy
    finds it (absolute, or next to the configuration files)."""
    conf = conf if conf is not None else CONF
    # NOTE(policy): the options are registered when an enforcer is made;
    # cyborg-status makes none.
    policy_opts.set_defaults(conf)
    found = []
    path = conf.find_file(conf.oslo_policy.policy_file)
    if path:
        found.append(path)
    for name in conf.oslo_policy.policy_dirs:
        directory = conf.find_file(name)
        if not directory or not os.path.isdir(directory):
            continue
        # NOTE(policy): as oslo.policy: plain files, no hidden ones, no
        # subdirectories.
        found.extend(os.path.join(directory, entry)
                     for entry in sorted(next(os.walk(directory))[2])
                     if not entry.startswith('.'))
    return found


def parse_error(path):
    """``(line, reason)`` when a policy file cannot be parsed, else None.

    :raises OSError: the file cannot be read.
    """
    with open(path, encoding='utf-8') as stream:
        text = stream.read()
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        line = mark.line + 1 if mark is not None else 1
        return line, str(getattr(exc, 'problem', None) or exc)
    if parsed is not None and not isinstance(parsed, dict):
        return 1, 'the file is not a mapping of rule names to rules'
    bad = [name for name, rule in (parsed or {}).items()
           if not isinstance(name, str) or not isinstance(rule, str)]
    if bad:
        return _line_of(text, bad[0]), ('rule %r is not "name: check '
                                        'string"' % (bad[0],))
    return None


def _line_of(text, name):
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().strip('"\'').startswith(str(name)):
            return number
    return 1


def broken_files(conf=None):
    """``[(path, line, reason)]`` of the policy files that do not parse."""
    found = []
    for path in policy_files(conf):
        try:
            error = parse_error(path)
        except (OSError, UnicodeDecodeError) as exc:
            error = (1, 'cannot be read: %s' % exc)
        if error is not None:
            found.append((path,) + error)
    return found


def _report_broken(conf):
    for path, line, reason in broken_files(conf):
        try:
            key = (path, os.path.getmtime(path))
        except OSError:
            key = (path, None)
        if key in _REPORTED:
            continue
        _REPORTED.add(key)
        LOG.error('Policy file %(path)s cannot be parsed at line %(line)d '
                  '(%(reason)s); the rules loaded before stay in force '
                  'until it is fixed.',
                  {'path': path, 'line': line, 'reason': reason})


def _load(enforcer):
    """Load changed policy files; a file that stops parsing leaves the last
    good rules in force (oslo.policy would fail the request)."""
    try:
        enforcer.load_rules()
    except Exception:
        _report_broken(enforcer.conf)
        if not enforcer.rules:
            # NOTE(policy): no good rules were ever loaded; refusing is the
            # only safe answer, and it is not a 500.
            raise exception.PolicyNotAuthorized(action='any') from None


def check_startup(conf=None):
    """Load the policy before serving; a file that does not parse stops the
    process with the file and the line.

    :raises ConfigError: a policy file does not parse.
    """
    enforcer = init(conf)
    broken = broken_files(enforcer.conf)
    if broken:
        raise exception.ConfigError(
            'Policy file %s cannot be parsed at line %d: %s' % broken[0])
    enforcer.load_rules()


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
    """The caller's own project and user, the target of every rule.

    NOTE(policy): oslo.policy compares %(project_id)s as text, and None
    matches None: a request of no project (a system- or domain-scoped
    token) gets a target no ``project_id:`` check matches.
    """
    return {'project_id': context.project_id or _NO_PROJECT,
            'user_id': context.user_id or _NO_PROJECT}


def check(rule, target, context):
    """Whether ``rule`` passes for ``context`` on ``target``; never raises.

    Every rule is about a project-scoped request: one without a project
    passes none.

    :param target: a dict for the rule's %(...)s checks; None means the
        caller's own project and user (``caller_target``).
    """
    if not context.project_id:
        return False
    enforcer = init()
    _load(enforcer)
    if target is None:
        target = caller_target(context)
    try:
        return bool(enforcer.authorize(rule, target, context))
    except (oslo_policy.PolicyNotAuthorized, oslo_policy.InvalidScope):
        return False


def authorize(rule, target, context):
    """Check ``rule`` for ``context``; raise Forbidden (403) if refused.

    :param target: a dict for the rule's %(...)s checks; None means the
        caller's own project and user (``caller_target``).
    """
    if not check(rule, target, context):
        LOG.info('Policy %(rule)s refused for user %(user)s in project '
                 '%(project)s.', {'rule': rule, 'user': context.user_id,
                                  'project': context.project_id})
        raise exception.PolicyNotAuthorized(action=rule)
    return True


def scope(rule, all_projects_rule, context):
    """Authorize ``rule``, then say whose resources the caller acts on.

    :param all_projects_rule: the rule that lets a caller reach every
        project's resources (administrators, by default).
    :returns: None for every project, else the caller's project.
    """
    authorize(rule, None, context)
    return reach(all_projects_rule, context)


def reach(all_projects_rule, context):
    """None when ``all_projects_rule`` passes (every project), else the
    caller's project; authorizes nothing."""
    if check(all_projects_rule, None, context):
        return None
    return context.project_id


def check_is_admin(context):
    """Whether the caller is an administrator (the ``context_is_admin``
    rule); the legacy rules' ``is_admin:True`` checks read the answer."""
    return check(ADMIN_RULE, None, context)


def undefined_references(conf=None):
    """``{rule: [undefined rule names it references]}`` among the rules of
    the policy files; oslo.policy evaluates such a reference as the
    ``default`` rule."""
    enforcer = oslo_policy.Enforcer(conf if conf is not None else CONF)
    enforcer.register_defaults(policies.list_rules())
    enforcer.load_rules()
    found = {}
    for name in sorted(enforcer.file_rules):
        check_ = enforcer.rules.get(name)
        missing = sorted({ref for ref in _references(check_)
                          if ref not in enforcer.rules})
        if missing:
            found[name] = missing
    return found


def _references(check_):
    if isinstance(check_, _checks.RuleCheck):
        yield check_.match
    for child in getattr(check_, 'rules', ()):
        yield from _references(child)
    if isinstance(check_, _checks.NotCheck):
        yield from _references(check_.rule)
