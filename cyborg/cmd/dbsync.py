"""cyborg-dbsync: upgrade, downgrade or show the database schema revision."""

import logging as py_logging
import sys

from alembic import util as alembic_util
from oslo_config import cfg

from cyborg import exception
from cyborg import service
from cyborg.db import api as dbapi
from cyborg.db import migration

CONF = cfg.CONF


def _upgrade() -> None:
    before = migration.version()
    migration.upgrade(CONF.command.revision)
    print('Database schema upgraded from %s to %s.'
          % (before, migration.version()))


def _downgrade() -> None:
    before = migration.version()
    migration.downgrade(CONF.command.revision)
    print('Database schema downgraded from %s to %s.'
          % (before, migration.version()))


def _version() -> None:
    print(migration.version())


_COMMANDS = {'upgrade': _upgrade, 'downgrade': _downgrade,
             'version': _version}


def _add_parsers(subparsers) -> None:
    subparsers.required = True
    parser = subparsers.add_parser(
        'upgrade', help='Upgrade the schema (to the newest revision unless '
                        '--revision says otherwise).')
    parser.add_argument('--revision', default='head',
                        help='Revision to upgrade to (default: head).')
    parser = subparsers.add_parser(
        'downgrade', help='Downgrade the schema; this drops data.')
    parser.add_argument('--revision', required=True,
                        help="Revision to downgrade to ('base': no tables).")
    subparsers.add_parser(
        'version', help='Print the revision the database is at, or None.')


_COMMAND_OPT = cfg.SubCommandOpt('command', title='Commands',
                                 handler=_add_parsers,
                                 help='What to do with the database schema.')


def main(argv: list[str] | None = None) -> None:
    CONF.register_cli_opt(_COMMAND_OPT)
    service.prepare_service(sys.argv[1:] if argv is None else argv)
    if not CONF.debug:
        # NOTE(dbsync): alembic reports its dialect at INFO on every
        # connection; `version` must print nothing but the revision.
        py_logging.getLogger('alembic').setLevel(py_logging.WARNING)
    try:
        # NOTE(dbsync): fail fast with one line naming the option, rather
        # than after enginefacade's retries with a traceback.
        dbapi.check_connection()
        _COMMANDS[CONF.command.name]()
    except (exception.ConfigError, alembic_util.CommandError) as exc:
        service.fail(exc)
