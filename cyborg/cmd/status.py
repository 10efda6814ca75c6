"""cyborg-status: upgrade readiness checks (oslo.upgradecheck)."""

import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import manager
from cyborg.db import api as dbapi
from cyborg.db import migration
from cyborg.objects import service as service_obj

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
        if self._check_schema().code != upgradecheck.Code.SUCCESS:
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                'Not checked: the database schema is not current.')
        manager.bind_objects_to_database()
        services = service_obj.Service.list(
            cyborg_context.get_admin_context(), binary=manager.BINARY)
        alive = sorted(s.host for s in services if s.is_up)
        if not alive:
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                'No cyborg-conductor has reported in the last %d seconds; '
                'the API and agents need at least one.'
                % CONF.conductor.service_down_time)
        return upgradecheck.Result(
            upgradecheck.Code.SUCCESS,
            'Conductors up: %s' % ', '.join(alive))

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Conductor liveness', _check_conductors),
    )


def main(argv=None):
    return upgradecheck.main(
        CONF, project='cyborg', upgrade_command=Checks(),
        argv=sys.argv[1:] if argv is None else argv)
