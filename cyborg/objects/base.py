"""Base classes of Cyborg's versioned objects and where their data lives.

A remotable method runs in the conductor: in the API and agent processes
``indirection_api`` is the conductor RPC client, so the call travels there;
in the conductor, ``dbapi`` is the query namespace of ``cyborg.db.api``,
which only the conductor sets (objects never import ``cyborg.db``), and
``listings`` its cache of the device and deployable lists.
"""

import datetime
import json

from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields as ovo_fields

from cyborg import exception
from cyborg import upgrade_levels


class CyborgObjectRegistry(ovo_base.VersionedObjectRegistry):
    """The registry of Cyborg's object classes."""


class _NoDatabase:
    """Stands in for the query namespace outside the conductor."""

    def __getattr__(self, name):
        raise exception.ObjectActionError(
            action=name,
            reason='this process has no database; remotable methods must '
                   'run in the conductor (is indirection_api set?)')


class CyborgObject(ovo_base.VersionedObject):
    """Base of every Cyborg object."""

    OBJ_SERIAL_NAMESPACE = 'cyborg_object'
    OBJ_PROJECT_NAMESPACE = 'cyborg'

    dbapi = _NoDatabase()
    listings = _NoDatabase()

    def cyborg_obj_get_changes(self):
        return self.obj_get_changes()

    #: Fields kept in the database as JSON text (lists, dicts).
    _json_fields = ()
    #: {(major, minor): fields added in that version}, so that older
    #: callers get primitives without them (obj_make_compatible).
    _fields_since = {}
    #: {remotable method: (major, minor) that added it}; a client pinned to
    #: conductors of an older version uses ``_older_forms`` instead.
    _methods_since = {}
    #: {remotable method: classmethod name} computing its result from
    #: methods older conductors have.
    _older_forms = {}

    @classmethod
    def _from_db_object(cls, obj, db_row, context=None):
        for name, field in obj.fields.items():
            if name in obj.db_excluded_fields():
                continue
            value = getattr(db_row, name)
            if name in cls._json_fields:
                value = json.loads(value) if value else field.default
            setattr(obj, name, value)
        obj._context = context
        obj.obj_reset_changes()
        return obj

    def obj_get_changes(self):
        changes = super().obj_get_changes()
        for name in self._json_fields:
            if name in changes:
                changes[name] = json.dumps(changes[name], sort_keys=True)
        return changes

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for since, names in self._fields_since.items():
            if target < since:
                for name in names:
                    primitive.pop(name, None)

    @classmethod
    def _from_db_rows(cls, context, rows):
        return [cls._from_db_object(cls(context), row, context)
                for row in rows]

    @classmethod
    def db_excluded_fields(cls):
        """Fields filled by the object itself rather than copied from a row.
        """
        return ()


class CyborgPersistentObject:
    """Timestamps every stored object has."""

    fields = {
        'created_at': ovo_fields.DateTimeField(nullable=True),
        'updated_at': ovo_fields.DateTimeField(nullable=True),
    }


class CyborgObjectSerializer(ovo_base.VersionedObjectSerializer):
    """Objects to and from primitives; with ``version_manifest`` (object
    name -> version a pinned peer knows) it sends those versions."""

    OBJ_BASE_CLASS = CyborgObject

    def __init__(self, version_manifest=None):
        super().__init__()
        self._manifest = version_manifest

    def serialize_entity(self, context, entity):
        if self._manifest and isinstance(entity, ovo_base.VersionedObject):
            target = upgrade_levels.pinned_version(self._manifest,
                                                   entity.obj_name())
            return entity.obj_to_primitive(target_version=target,
                                           version_manifest=self._manifest)
        return super().serialize_entity(context, entity)


def view_rows(objs, names):
    """A list view's ``{'fields', 'rows'}`` built from objects, as the
    conductor's list cache renders it (times as UTC text, whole seconds).
    """
    rows = []
    for obj in objs:
        row = []
        for name in names:
            value = getattr(obj, name)
            if isinstance(value, datetime.datetime):
                if value.tzinfo is not None:
                    value = value.astimezone(
                        datetime.timezone.utc).replace(tzinfo=None)
                value = value.replace(microsecond=0).isoformat()
            row.append(value)
        rows.append(row)
    return {'fields': list(names), 'rows': json.dumps(rows)}


def obj_to_primitive(obj):
    return obj.obj_to_primitive() if obj is not None else None


class CrudMixin:
    """Remotable get/list/create/save/destroy over one query resource.

    ``_resource`` names the resource in the conductor's query namespace.
    """

    _resource = None

    @classmethod
    def _queries(cls):
        return getattr(cls.dbapi, cls._resource)

    @ovo_base.remotable_classmethod
    def get(cls, context, uuid):
        row = cls._queries().get(context, uuid)
        return cls._from_db_object(cls(context), row, context)

    @ovo_base.remotable_classmethod
    def get_by_id(cls, context, id_):
        row = cls._queries().get_by_id(context, id_)
        return cls._from_db_object(cls(context), row, context)

    @ovo_base.remotable_classmethod
    def list(cls, context, filters=None, limit=None, marker=None,
             sort_key='id', sort_dir='asc'):
        rows = cls._queries().list(context, filters=filters, limit=limit,
                                   marker=marker, sort_key=sort_key,
                                   sort_dir=sort_dir)
        return cls._from_db_rows(context, rows)

    @ovo_base.remotable
    def create(self):
        values = self.obj_get_changes()
        row = self._queries().create(self._context, values)
        self._from_db_object(self, row, self._context)

    @ovo_base.remotable
    def save(self):
        updates = self.obj_get_changes()
        if not updates:
            return
        row = self._queries().update(self._context, self.uuid, updates)
        self._from_db_object(self, row, self._context)

    @ovo_base.remotable
    def destroy(self):
        self._queries().destroy(self._context, self.uuid)
        self.obj_reset_changes()
