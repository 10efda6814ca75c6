"""Service: liveness of one conductor or agent process."""

import datetime

from oslo_config import cfg
from oslo_versionedobjects import base as ovo_base

from cyborg import exception
from cyborg.objects import base
from cyborg.objects import fields

CONF = cfg.CONF


@base.CyborgObjectRegistry.register
class Service(base.CyborgObject, base.CyborgPersistentObject,
              ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    # Version 1.1: report_generation, report_interval, drivers
    # Version 1.2: rpc_version; heartbeat() takes it
    # Version 1.3: clock_skew, read_at
    VERSION = '1.3'

    _json_fields = ('drivers',)
    _fields_since = {(1, 1): ('report_generation', 'report_interval',
                              'drivers'),
                     (1, 2): ('rpc_version',),
                     (1, 3): ('clock_skew', 'read_at')}

    fields = {
        'id': fields.IntegerField(nullable=False),
        'host': fields.StringField(nullable=False),
        'binary': fields.StringField(nullable=False),
        'topic': fields.StringField(nullable=True),
        'version': fields.StringField(nullable=True),
        'rpc_version': fields.StringField(nullable=True),
        'report_count': fields.IntegerField(nullable=False),
        'last_seen_up': fields.DateTimeField(nullable=True),
        'disabled': fields.BooleanField(nullable=False),
        'disabled_reason': fields.StringField(nullable=True),
        'report_generation': fields.IntegerField(nullable=True),
        'report_interval': fields.IntegerField(nullable=True),
        'drivers': fields.ListOfStringsField(nullable=False, default=[]),
        # Seconds the service's clock was ahead of the database server's
        # at its last heartbeat (negative: behind); None: not measured.
        'clock_skew': fields.FloatField(nullable=True),
        # The database server's time when the record was read: what its
        # liveness is judged against.
        'read_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def db_excluded_fields(cls):
        return ('read_at',)

    @classmethod
    def _read(cls, context, read_at, rows):
        found = cls._from_db_rows(context, rows)
        for service in found:
            service.read_at = read_at
            service.obj_reset_changes(['read_at'])
        return found

    @ovo_base.remotable_classmethod
    def heartbeat(cls, context, host, binary, topic=None, version=None,
                  rpc_version=None):
        cls.dbapi.services.heartbeat(context, host, binary, topic=topic,
                                     version=version, rpc_version=rpc_version)

    @ovo_base.remotable_classmethod
    def get(cls, context, host, binary):
        read_at, rows = cls.dbapi.services.read(context, binary, host=host)
        if not rows:
            raise exception.ServiceNotFound(host=host, binary=binary)
        return cls._read(context, read_at, rows)[0]

    @ovo_base.remotable_classmethod
    def list(cls, context, binary=None):
        return cls._read(context,
                         *cls.dbapi.services.read(context, binary))

    @property
    def down_after(self):
        """Seconds of silence after which the service counts as down.

        Three report intervals for an agent that said its interval, else
        ``[conductor] service_down_time``.
        """
        if self.obj_attr_is_set('report_interval') and self.report_interval:
            return 3 * self.report_interval
        return CONF.conductor.service_down_time

    @property
    def is_up(self):
        """Whether the service reported recently enough (``down_after``),
        judged by the database server's clock when the record was read.
        """
        if self.last_seen_up is None:
            return False
        # NOTE(clock): only a record from a conductor older than 1.3 has no
        # read_at; this process's clock is all there is then.
        now = (self.read_at if self.obj_attr_is_set('read_at') and
               self.read_at is not None
               else datetime.datetime.now(datetime.timezone.utc))
        age = now - self.last_seen_up
        return age.total_seconds() <= self.down_after
