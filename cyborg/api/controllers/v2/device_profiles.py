"""``/v2/device_profiles``: what flavors ask for, validated in one place."""

from oslo_utils import uuidutils
import pecan
from pecan import rest
import wsme.api
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api import paging
from cyborg.api import validation
from cyborg.api.types import base as types_base
from cyborg.api.types import device_profile as dp_types
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import device_profile as dp_obj

_SORT_KEYS = ('id', 'uuid', 'name', 'created_at', 'updated_at')


CANDIDATES = 'candidates'
#: Whether the candidates list the devices that offer nothing (2.10).
UNOFFERED_LISTED = microversion.ByVersion({'2.0': False, '2.10': True})


def _no_part(part):
    if part is not None:
        raise exception.RouteNotFound(
            'No such resource: GET /v2/device_profiles/{uuid_or_name}/%s'
            % part)


def _names(value):
    names = [name.strip() for name in (value or '').split(',')]
    if not all(names):
        raise exception.Invalid(reason='give one or more comma-separated '
                                       'device profile names')
    return names


def _duplicate(context, fields):
    """Which of the new profile's unique fields another profile has."""
    uuid = fields.get('uuid')
    if uuid:
        try:
            dp_obj.DeviceProfile.get(context, uuid)
        except exception.DeviceProfileNotFound:
            pass
        else:
            return exception.DuplicateDeviceProfileUUID(uuid=uuid)
    return exception.DuplicateDeviceProfile(name=fields['name'])


def _shown(profile):
    return dp_types.DeviceProfileOne(
        device_profile=dp_types.DeviceProfile.from_object(profile))


class DeviceProfilesController(rest.RestController):
    """Named lists of request groups; global, written by administrators."""

    @expose.expose(dp_types.DeviceProfileCollection, wtypes.text)
    def get_all(self, name=None):
        types_base.check_query(pecan.request.params,
                               ('name',) + paging.params())
        pages = paging.parse(_SORT_KEYS)
        context = pecan.request.context
        policy.authorize('cyborg:device_profile:get_all', None, context)
        filters = {'name': _names(name)} if name is not None else None
        profiles = dp_obj.DeviceProfile.list(context, filters=filters,
                                             **pages)
        return dp_types.DeviceProfileCollection.from_objects(
            profiles,
            next_link=paging.next_link('device_profiles', profiles, pages))

    @expose.expose(dp_types.DeviceProfileOne, wtypes.text, wtypes.text,
                   path=2)
    @microversion.versioned('2.0', '2.1')
    def get_one(self, uuid_or_name, part=None):
        """By uuid; a name in the path is refused (406), as upstream."""
        _no_part(part)
        context = pecan.request.context
        policy.authorize('cyborg:device_profile:get_one', None, context)
        if not uuidutils.is_uuid_like(uuid_or_name):
            raise exception.NotAcceptableInMicroversion(
                what='Showing a device profile by name', since='2.2',
                version=microversion.current())
        return _shown(dp_obj.DeviceProfile.get(context, uuid_or_name))

    @expose.expose(dp_types.DeviceProfileOne, wtypes.text, wtypes.text,
                   wtypes.text, path=2)
    @microversion.versioned('2.2')
    def get_one(self, uuid_or_name, part=None,  # noqa: F811 (a variant)
                member_of=None):
        """By uuid or by name; (2.8) ``.../candidates``."""
        context = pecan.request.context
        if part == CANDIDATES:
            return self._candidates(context, uuid_or_name, member_of)
        _no_part(part)
        types_base.check_query(pecan.request.params, ())
        policy.authorize('cyborg:device_profile:get_one', None, context)
        if uuidutils.is_uuid_like(uuid_or_name):
            return _shown(dp_obj.DeviceProfile.get(context, uuid_or_name))
        return _shown(dp_obj.DeviceProfile.get_by_name(context,
                                                       uuid_or_name))

    @microversion.versioned('2.8')
    def _candidates(self, context, uuid_or_name, member_of):
        """Every deployable judged for every group of the profile."""
        types_base.check_query(pecan.request.params, ('member_of',))
        policy.authorize('cyborg:device_profile:candidates', None, context)
        if member_of is not None:
            member_of = validation.member_of(member_of)
        body = conductor_rpcapi.for_api().explain_profile(
            context, uuid_or_name, context.project_id, member_of)
        if not UNOFFERED_LISTED():
            # NOTE(explain): the devices that offer nothing (no deployable)
            # are listed from 2.10; 2.8 and 2.9 answer as they did.
            for group in body['groups']:
                group['candidates'] = [
                    entry for entry in group['candidates']
                    if entry['deployable_uuid'] is not None]
        return types_base.rendered(body)

    @expose.expose(dp_types.DeviceProfile, body=dp_types.POST_BODY,
                   schema=validation.DEVICE_PROFILE_POST, status_code=201)
    def post(self, profiles):
        """Create from ``[{"name", "groups", "description"?, "uuid"?}]``.
        """
        context = pecan.request.context
        policy.authorize('cyborg:device_profile:create', None, context)
        fields = validation.device_profile(profiles[0].as_dict())
        profile = dp_obj.DeviceProfile(context, **fields)
        try:
            profile.create()
        except exception.DuplicateEntry as exc:
            raise _duplicate(context, fields) from exc
        view = dp_types.DeviceProfile.from_object(profile)
        pecan.response.location = view.links[0].href
        return view

    @expose.expose(None, wtypes.text, wtypes.text, path=1, status_code=204)
    def delete(self, uuid_or_names=None, value=None):
        """``DELETE /{uuid}``, or by names: ``/{n1,n2}`` or ``?value=``.

        Every named profile is checked before any is deleted, so a missing
        or used one leaves all of them in place.
        """
        types_base.check_query(pecan.request.params, ('value',))
        target = uuid_or_names if uuid_or_names is not None else value
        if target is None:
            raise exception.Invalid(reason='name a device profile by uuid '
                                           'or give ?value=<names>')
        context = pecan.request.context
        policy.authorize('cyborg:device_profile:delete', None, context)
        if uuidutils.is_uuid_like(target):
            uuids = [target]
        else:
            uuids = [dp_obj.DeviceProfile.get_by_name(context, name).uuid
                     for name in _names(target)]
        dp_obj.DeviceProfile.destroy_many(context, uuids)
        return wsme.api.Response(None, status_code=204, return_type=None)
