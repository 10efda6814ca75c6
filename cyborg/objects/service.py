"""Service: liveness of one conductor or agent process."""

import datetime

from oslo_config import cfg
from oslo_versionedobjects import base as ovo_base

from cyborg.objects import base
from cyborg.objects import fields

CONF = cfg.CONF


@base.CyborgObjectRegistry.register
class Service(base.CyborgObject, base.CyborgPersistentObject,
              ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    # Version 1.1: report_generation, report_interval, drivers
    # Version 1.2: rpc_version; heartbeat() takes it
    VERSION = '1.2'

    _json_fields = ('drivers',)
    _fields_since = {(1, 1): ('report_generation', 'report_interval',
                              'drivers'),
                     (1, 2): ('rpc_version',)}

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
    }

    @ovo_base.remotable_classmethod
    def heartbeat(cls, context, host, binary, topic=None, version=None,
                  rpc_version=None):
        cls.dbapi.services.heartbeat(context, host, binary, topic=topic,
                                     version=version, rpc_version=rpc_version)

    @ovo_base.remotable_classmethod
    def get(cls, context, host, binary):
        row = cls.dbapi.services.get(context, host, binary)
        return cls._from_db_object(cls(context), row, context)

    @ovo_base.remotable_classmethod
    def list(cls, context, binary=None):
        return cls._from_db_rows(context,
                                 cls.dbapi.services.list(context, binary))

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
        """Whether the service reported recently enough (``down_after``)."""
        if self.last_seen_up is None:
            return False
        age = datetime.datetime.now(datetime.timezone.utc) - self.last_seen_up
        return age.total_seconds() <= self.down_after
