"""Options of the [database] group, from oslo.db, with Cyborg's default."""

from oslo_config import cfg
from oslo_db import options as db_options

DEFAULT_CONNECTION = 'sqlite:///$state_path/cyborg.sqlite'


def register_opts(conf):
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    # NOTE(conf): the options belong to oslo.db; the generator gets them here
    # with Cyborg's default connection so the sample shows what runs.
    cfg.set_defaults(db_options.database_opts, connection=DEFAULT_CONNECTION)
    return {'database': db_options.database_opts}
