"""cyborg-status: upgrade readiness checks (oslo.upgradecheck)."""

import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck
from oslo_utils import fileutils
from oslo_utils import versionutils

from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import policy
from cyborg import states
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import inventory
from cyborg.conductor import manager
from cyborg.conductor import orphans
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor.bind import store as arq_store
from cyborg.db import api as dbapi
from cyborg.db import migration
from cyborg.objects import service as service_obj

CONF = cfg.CONF

Code = upgradecheck.Code
Result = upgradecheck.Result

#: How many hosts or ARQs a result names; the others are only counted.
LISTED = 10

#: The RPC API version this release serves, per binary.
RPC_VERSIONS = {
    manager.BINARY: conductor_rpcapi.ConductorAPI.RPC_API_VERSION,
    inventory.AGENT_BINARY: agent_rpcapi.AgentAPI.RPC_API_VERSION,
}


def _listed(items, total=None):
    """The first ``LISTED`` of ``items``, then how many more there are (of
    ``total``, when ``items`` holds only the first ones)."""
    total = len(items) if total is None else total
    shown = ', '.join(items[:LISTED])
    if total > LISTED:
        shown += ' and %d more' % (total - LISTED)
    return shown


def _older(recorded, wanted):
    """Whether an RPC version a service recorded is older than ``wanted``;
    a missing or unreadable one counts as older."""
    try:
        return (versionutils.convert_version_to_tuple(recorded) <
                versionutils.convert_version_to_tuple(wanted))
    except (AttributeError, TypeError, ValueError):
        return True


class Checks(upgradecheck.UpgradeCommands):
    """What must hold before (and after) upgrading Cyborg."""

    _schema = None

    # --- The database ------------------------------------------------------

    def _check_schema(self):
        if self._schema is None:
            self._schema = self._schema_result()
        return self._schema

    @staticmethod
    def _schema_result():
        try:
            dbapi.check_connection()
        except exception.ConfigError as exc:
            return Result(Code.FAILURE, str(exc))
        current, head = migration.version(), migration.head()
        if current is None:
            return Result(
                Code.FAILURE,
                'The database has no Cyborg schema. Run "cyborg-dbsync '
                'upgrade" to create it (revision %s).' % head)
        if current != head:
            return Result(
                Code.FAILURE,
                'The database schema is at revision %s but this release '
                'needs %s. Run "cyborg-dbsync upgrade" with this release '
                'installed; conductors of this release do not start '
                'until then.' % (current, head))
        return Result(Code.SUCCESS, 'At revision %s.' % head)

    def _not_checked(self):
        """A WARNING when the database cannot be read as this release
        reads it, else None (and the objects read it from here on)."""
        if self._check_schema().code != Code.SUCCESS:
            return Result(Code.WARNING,
                          'Not checked: the database schema is not current '
                          '(see "Database schema").')
        manager.bind_objects_to_database()
        return None

    # --- Services ----------------------------------------------------------

    def _check_conductors(self):
        not_checked = self._not_checked()
        if not_checked:
            return not_checked
        services = service_obj.Service.list(
            cyborg_context.get_admin_context(), binary=manager.BINARY)
        alive = sorted(s.host for s in services if s.is_up)
        if not alive:
            return Result(
                Code.WARNING,
                'No cyborg-conductor has reported in the last %d seconds; '
                'the API and agents need at least one. Start one (it '
                'records itself every [conductor] heartbeat_interval '
                'seconds).' % CONF.conductor.service_down_time)
        return Result(Code.SUCCESS, 'Conductors up: %s' % _listed(alive))

    def _check_rpc_versions(self):
        not_checked = self._not_checked()
        if not_checked:
            return not_checked
        older = []
        for svc in sorted(service_obj.Service.list(
                cyborg_context.get_admin_context()),
                key=lambda s: (s.binary, s.host)):
            wanted = RPC_VERSIONS.get(svc.binary)
            if wanted and svc.is_up and _older(svc.rpc_version, wanted):
                older.append('%s on %s (%s)' % (
                    svc.binary, svc.host, svc.rpc_version or 'not recorded'))
        this_release = ', '.join(
            '%s %s' % item for item in sorted(RPC_VERSIONS.items()))
        if not older:
            return Result(Code.SUCCESS,
                          'Every live service serves the RPC API of this '
                          'release (%s).' % this_release)
        return Result(
            Code.WARNING,
            'These live services serve an older RPC API than this release '
            '(%s): %s. Calls that need the newer API fail on them. Upgrade '
            'each to this release and restart it; an agent records its new '
            'version at its first report after the restart. "not recorded" '
            'is a release older than the one that started recording it.'
            % (this_release, _listed(older)))

    def _check_clock_skew(self):
        not_checked = self._not_checked()
        if not_checked:
            return not_checked
        threshold = CONF.conductor.clock_skew_threshold
        skewed = ['%s on %s (%+.1f s)' % (svc.binary, svc.host,
                                          svc.clock_skew)
                  for svc in sorted(service_obj.Service.list(
                      cyborg_context.get_admin_context()),
                      key=lambda s: (s.binary, s.host))
                  if svc.is_up and svc.clock_skew is not None and
                  abs(svc.clock_skew) > threshold]
        if not skewed:
            return Result(Code.SUCCESS,
                          'Every live service that measures its clock is '
                          'within %s seconds of the database server\'s.'
                          % threshold)
        return Result(
            Code.WARNING,
            'The clocks of these live services are further than [conductor] '
            'clock_skew_threshold (%s s) from the database server\'s '
            '(positive: ahead): %s. Liveness and takeover go by the '
            'database\'s clock, so none takes work from the others, but '
            'their logs, call deadlines and timestamps are off by that '
            'much. Fix the hosts\' time synchronisation (NTP).'
            % (threshold, _listed(skewed)))

    # --- Accelerator requests ----------------------------------------------

    def _check_stuck_arqs(self):
        not_checked = self._not_checked()
        if not_checked:
            return not_checked
        age = CONF.conductor.arq_stuck_after
        count, uuids = arq_store.stuck(cyborg_context.get_admin_context(), age,
                                       LISTED)
        if not count:
            return Result(Code.SUCCESS)
        return Result(
            Code.WARNING,
            'Accelerator requests in %s for more than %d seconds '
            '([conductor] arq_stuck_after): %s. A conductor that starts '
            'finishes the binds a stopped one left (each becomes Bound or '
            'BindFailed, and Nova is told): restart a cyborg-conductor and '
            'run this check again. Delete those that remain (DELETE '
            '/v2/accelerator_requests?arqs=<uuid>) before upgrading.'
            % (' or '.join(sorted(states.ARQ_TRANSITIONAL)), age,
               _listed(uuids, count)))

    def _check_orphan_arqs(self):
        not_checked = self._not_checked()
        if not_checked:
            return not_checked
        count, oldest, age = orphans.summary(
            cyborg_context.get_admin_context())
        if not count:
            return Result(Code.SUCCESS)
        if CONF.conductor.orphan_arq_age:
            fix = ('Quotas do not count them, and a running conductor '
                   'removes them within about %d seconds; if they stay, '
                   'start a cyborg-conductor.' % orphans.INTERVAL)
        else:
            fix = ('[conductor] orphan_arq_age is 0, so nothing removes '
                   'them and quotas count them: set it, or delete them '
                   '(DELETE /v2/accelerator_requests?arqs=<uuid>).')
        return Result(
            Code.WARNING,
            '%d accelerator requests are Initial with no instance for more '
            'than %d seconds, the oldest for %d seconds: their creator gave '
            'up on them (an API call answered 503, or a boot that failed '
            'before binding them). %s' % (count, age, oldest, fix))

    # --- Policy --------------------------------------------------------------

    def _check_policy_format(self):
        json_files, unreadable = [], []
        for path in policy.policy_files(CONF):
            try:
                if fileutils.is_json(path):
                    json_files.append(path)
            except (OSError, UnicodeDecodeError) as exc:
                unreadable.append('%s (%s)' % (path, exc.__class__.__name__))
        problems = []
        if json_files:
            problems.append(
                'JSON policy files: %s. oslo.policy deprecated JSON policy '
                'files; convert each one to YAML with '
                '"oslopolicy-convert-json-to-yaml --namespace cyborg '
                '--policy-file <file.json> --output-file <file.yaml>", then '
                'set [oslo_policy] policy_file to the YAML file (or, in '
                'a policy directory, replace the JSON file with it).'
                % _listed(json_files))
        if unreadable:
            problems.append('Policy files that cannot be read: %s; the API '
                            'fails on them.' % _listed(unreadable))
        if problems:
            return Result(Code.WARNING, ' '.join(problems))
        return Result(Code.SUCCESS)

    def _check_policy_rules(self):
        broken = policy.broken_files(CONF)
        if broken:
            return Result(Code.FAILURE, 'Policy files that do not parse: %s. '
                          'cyborg-api refuses to start on them, and a '
                          'running API keeps the rules it loaded before.'
                          % _listed(['%s line %d (%s)' % entry
                                     for entry in broken]))
        try:
            undefined = policy.undefined_references(CONF)
        except Exception as exc:
            return Result(Code.FAILURE, 'The policy files cannot be loaded: '
                                        '%s' % exc)
        if undefined:
            return Result(Code.WARNING, 'Policy overrides reference rules '
                          'that are not defined: %s. oslo.policy evaluates '
                          'such a reference as the "default" rule, which '
                          'only administrators pass; define the rule or fix '
                          'its name.' % _listed(
                              ['%s (in %s)' % (', '.join(names), rule)
                               for rule, names in undefined.items()]))
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Conductor liveness', _check_conductors),
        ('Service RPC versions', _check_rpc_versions),
        ('Clock skew', _check_clock_skew),
        ('Stuck accelerator requests', _check_stuck_arqs),
        ('Orphaned accelerator requests', _check_orphan_arqs),
        ('Policy file format', _check_policy_format),
        ('Policy rules', _check_policy_rules),
    )


def main(argv=None):
    return upgradecheck.main(
        CONF, project='cyborg', upgrade_command=Checks(),
        argv=sys.argv[1:] if argv is None else argv)
