"""DeviceProfile: a named request for accelerators, as flavors name it."""

import json

from oslo_versionedobjects import base as ovo_base

from cyborg import exception
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class DeviceProfile(base.CrudMixin, base.CyborgObject,
                    base.CyborgPersistentObject,
                    ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = '1.0'

    _resource = 'device_profiles'

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'name': fields.StringField(nullable=False),
        'description': fields.StringField(nullable=True),
        # NOTE(objects): each group is one Placement request group, its
        # keys resources:<RC>, trait:<TRAIT> and accel:<name>.
        'groups': fields.ListOfDictOfNullableStringsField(nullable=False),
    }

    @classmethod
    def db_excluded_fields(cls):
        return ('groups',)

    @classmethod
    def _from_db_object(cls, obj, db_row, context=None):
        super()._from_db_object(obj, db_row, context)
        obj.groups = json.loads(db_row.profile_json).get('groups', [])
        obj.obj_reset_changes(['groups'])
        return obj

    def obj_get_changes(self):
        changes = super().obj_get_changes()
        if 'groups' in changes:
            changes['profile_json'] = json.dumps(
                {'groups': changes.pop('groups')}, sort_keys=True)
        return changes

    @ovo_base.remotable_classmethod
    def get_by_name(cls, context, name):
        rows = cls._queries().list(context, filters={'name': name})
        if not rows:
            raise exception.DeviceProfileNotFound(uuid=name)
        return cls._from_db_object(cls(context), rows[0], context)

    @ovo_base.remotable
    def destroy(self):
        self.destroy_many(self._context, [self.uuid])
        self.obj_reset_changes()

    @ovo_base.remotable_classmethod
    def destroy_many(cls, context, uuids):
        """Delete profiles; when one is missing or used, none is deleted.
        """
        profiles = [cls._queries().get(context, uuid) for uuid in uuids]
        used = cls.dbapi.accelerator_requests.list(
            context, filters={'device_profile_id': [p.id for p in profiles]},
            limit=1)
        if used:
            (name,) = [p.name for p in profiles
                       if p.id == used[0].device_profile_id]
            raise exception.DeviceProfileInUse(name=name)
        for profile in profiles:
            try:
                cls._queries().destroy(context, profile.uuid)
            except exception.ResourceInUse as exc:
                # NOTE(objects): an ARQ made from it since the check.
                raise exception.DeviceProfileInUse(name=profile.name) \
                    from exc
