"""Sends remotable object methods to the conductor over RPC."""

from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base

from cyborg import exception
from cyborg import upgrade_levels
from cyborg.conductor import rpcapi as conductor_rpcapi


class ConductorIndirectionAPI(ovo_base.VersionedObjectIndirectionAPI):
    """The indirection API of every process that is not the conductor."""

    def __init__(self, client_factory=None):
        """:param client_factory: makes the conductor RPC client (the
            API's bounds its calls by [api] rpc_timeout); the agent's is
            the plain ConductorAPI."""
        super().__init__()
        self._client = None
        self._client_factory = client_factory or conductor_rpcapi.ConductorAPI

    @property
    def _conductor(self):
        # NOTE(objects): built on first use, once the RPC transport exists.
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    def object_action(self, context, objinst, objmethod, args, kwargs):
        self._older_form(objinst.obj_name(), objmethod)
        return self._conductor.object_action(context, objinst, objmethod,
                                             args, kwargs)

    def object_class_action(self, context, objname, objmethod, objver,
                            args, kwargs):
        # NOTE(objects): kept for old callers of the interface; everything
        # here uses object_class_action_versions.
        versions = ovo_base.obj_tree_get_versions(objname)
        return self.object_class_action_versions(
            context, objname, objmethod, versions, args, kwargs)

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        older = self._older_form(objname, objmethod)
        if older is not None:
            return older(context, *args, **kwargs)
        pins = getattr(self._conductor, 'object_versions', None)
        if pins is not None:
            # NOTE(objects): pinned conductors know older objects; they
            # answer with (and backport to) the versions asked for.
            upgrade_levels.pinned_version(pins, objname)
            object_versions = {name: pins[name] for name in object_versions
                               if name in pins}
        return self._conductor.object_class_action_versions(
            context, objname, objmethod, object_versions, args, kwargs)

    def _older_form(self, objname, objmethod):
        """The object's stand-in for a remotable method the pinned
        conductors lack, or None when they have it.

        :raises RPCVersionCapped: they lack it and it has no stand-in.
        """
        pins = getattr(self._conductor, 'object_versions', None)
        cls = ovo_base.VersionedObjectRegistry.obj_classes()[objname][0]
        since = cls._methods_since.get(objmethod)
        if pins is None or since is None:
            return None
        pinned = upgrade_levels.pinned_version(pins, objname)
        if versionutils.convert_version_to_tuple(pinned) >= since:
            return None
        stand_in = cls._older_forms.get(objmethod)
        if stand_in is None:
            raise exception.RPCVersionCapped(
                action='%s.%s' % (objname, objmethod), service='conductor',
                needed=upgrade_levels.first_conductor_with(
                    objname, '%d.%d' % since),
                cap=upgrade_levels.CONF.upgrade_levels.conductor)
        return getattr(cls, stand_in)

    def object_backport_versions(self, context, objinst, object_versions):
        return self._conductor.object_backport_versions(context, objinst,
                                                        object_versions)
