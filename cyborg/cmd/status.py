"""cyborg-status: upgrade readiness checks (oslo.upgradecheck)."""

import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.db import api as dbapi
from cyborg.db import migration

CONF = cfg.CONF


class Checks(upgradecheck.UpgradeCommands):
    """What must hold before (and after) upgrading Cyborg."""

    def _check_schema(self):
        try:
            dbapi.check_connection()
        except exception.ConfigError as exc:
            return upgradecheck.Result(upgradecheck.Code.FAILURE, str(exc))
        current, head = migration.version(), migration.head()
        if current != head:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                'The database schema is at revision %s but this release '
                'needs %s. Run "cyborg-dbsync upgrade".' % (current, head))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_conductors(self):
        try:
            services = dbapi.services.list(
                cyborg_context.get_admin_context(), 'cyborg-conductor')
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                'Could not read service records: %s' % exc)
        from cyborg.objects import service as service_obj
        alive = [s.host for s in service_obj.Service._from_db_rows(
            None, services) if s.is_up]
        if not alive:
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                'No cyborg-conductor has reported in the last %d seconds; '
                'the API and agents need at least one.'
                % CONF.conductor.service_down_time)
        return upgradecheck.Result(
            upgradecheck.Code.SUCCESS,
            'Conductors up: %s' % ', '.join(sorted(alive)))

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Conductor liveness', _check_conductors),
    )


def main(argv=None):
    return upgradecheck.main(
        CONF, project='cyborg', upgrade_command=Checks(),
        argv=sys.argv[1:] if argv is None else argv)
