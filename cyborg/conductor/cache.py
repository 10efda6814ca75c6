"""The conductor's cache of the device and deployable lists, never stale."""

import collections
import json
import threading
import time
import uuid
import weakref

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import context as cyborg_context
from cyborg.conductor import rpcapi
from cyborg.db import lists
from cyborg.db import watch

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

WATCHED = watch.WATCHED
#: The most lists (one per query) the cache holds.
MAX_ENTRIES = 32
_MARK = 'cyborg.conductor.cache.wrote'


class _Entry:
    __slots__ = ('generation', 'fingerprint', 'payload', 'built', 'lock')

    def __init__(self):
        self.lock = threading.Lock()
        self.generation = self.fingerprint = self.payload = None
        self.built = 0.0


class Lists:
    """The cached lists of one conductor process.

    A list is read from the database once and kept as JSON text, which is
    also what goes over RPC, until something may have changed it. Three
    things say so:

    * a write to one of the listed tables by this process: every statement
      that changes them is seen on the engine, and the generation moves on
      once the transaction's connection is back in the pool, that is after
      the commit and before the writer answers anyone;
    * a write by another conductor, which tells every conductor over
      fanout RPC (``invalidate``);
    * the tables' fingerprint (row counts, highest ids, the sum of the
      rows' update times), read in one SELECT before a cached list is
      served: it catches what no message told (a conductor of an older
      release, a lost message, a hand-made fix) but a second update of one
      row within the same second.

    A list also expires after ``[conductor] list_cache_max_age`` seconds.
    """

    def __init__(self):
        self.origin = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._generation = 0
        self._entries = collections.OrderedDict()
        self._engines = weakref.WeakSet()

    # --- What may have changed ---------------------------------------------

    def watch(self, engine):
        """See every write ``engine`` makes to the listed tables."""
        with self._lock:
            if engine in self._engines:
                return
            self._engines.add(engine)
        watch.listen(engine, self._executed, self._committing,
                     self._returned)

    def _executed(self, conn, cursor, statement, params, context, many):
        # NOTE(cache): the periodic tasks of every conductor run UPDATEs
        # on the listed tables that usually match nothing; were those
        # writes, every list would be read again every few seconds.
        if (watch.writes_listed(statement, context) and
                watch.changed_rows(cursor)):
            conn.info[_MARK] = True

    def _committing(self, conn):
        # NOTE(cache): also before the commit, for a connection that commits
        # more than once before it goes back to the pool; a list read in
        # between is dropped again by _returned.
        if conn.info.get(_MARK):
            self.invalidate()

    def _returned(self, dbapi_connection, record):
        if record.info.pop(_MARK, False):
            self.invalidate()
            self._tell_others()

    def invalidate(self, origin=None):
        """Forget every list; ``origin``: the process that wrote, if known.
        """
        if origin == self.origin:
            return
        with self._lock:
            self._generation += 1

    def _tell_others(self):
        # NOTE(cache): from the writer's thread, before it answers anyone,
        # so that the other conductors hear of the write before a request
        # that follows it; once, without retrying: the fingerprint backs
        # it up while RabbitMQ is away.
        try:
            rpcapi.ConductorAPI().invalidate_lists(
                cyborg_context.get_admin_context(), self.origin)
        except Exception as exc:  # noqa: BLE001 - never fails the write
            LOG.debug('Could not tell the other conductors that the lists '
                      'changed: %s', exc)

    # --- The lists -------------------------------------------------------

    def deployables(self, context, **query):
        """``{'fields', 'rows'}``: ``lists.DEPLOYABLE_FIELDS`` and the rows
        as JSON text."""
        return self._get(context, 'deployables', lists.deployables, query)

    def devices(self, context, **query):
        """``{'fields', 'rows'}``: ``lists.DEVICE_FIELDS`` and the rows as
        JSON text."""
        return self._get(context, 'devices', lists.devices, query)

    def _get(self, context, name, read, query):
        fields = {'deployables': lists.DEPLOYABLE_FIELDS,
                  'devices': lists.DEVICE_FIELDS}[name]
        max_age = CONF.conductor.list_cache_max_age
        if not max_age:
            return _payload(fields, read(context, **query))
        self.watch(watch.engine())
        entry = self._entry((name, json.dumps(query, sort_keys=True,
                                              default=repr)))
        # NOTE(cache): one read per list at a time: requests that come
        # while it runs wait for it and then check it as any cached list.
        with entry.lock:
            generation = self._generation
            fingerprint = lists.fingerprint(context, lists.TABLES[name])
            if (entry.generation == generation and
                    entry.fingerprint == fingerprint and
                    time.monotonic() - entry.built < max_age):
                return entry.payload
            payload = _payload(fields, read(context, **query))
            with self._lock:
                if self._generation == generation:
                    entry.generation, entry.fingerprint = (generation,
                                                           fingerprint)
                    entry.payload, entry.built = payload, time.monotonic()
            return payload

    def _entry(self, key):
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
                while len(self._entries) > MAX_ENTRIES:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            return entry


def _payload(fields, rows):
    # NOTE(cache): JSON text crosses RPC as one string: neither side's
    # serializer walks thousands of rows. ``rows`` is that text already:
    # the rows were encoded as they came from the database.
    return {'fields': list(fields), 'rows': rows}


#: The cache of this process; the conductor binds the objects to it.
LISTS = Lists()
watch.on_engine_create(LISTS.watch)
