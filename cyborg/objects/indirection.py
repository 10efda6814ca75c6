"""Sends remotable object methods to the conductor over RPC."""

from oslo_versionedobjects import base as ovo_base

from cyborg.conductor import rpcapi as conductor_rpcapi


class ConductorIndirectionAPI(ovo_base.VersionedObjectIndirectionAPI):
    """The indirection API of every process that is not the conductor."""

    def __init__(self):
        super().__init__()
        self._client = None

    @property
    def _conductor(self):
        # NOTE(objects): built on first use, once the RPC transport exists.
        if self._client is None:
            self._client = conductor_rpcapi.ConductorAPI()
        return self._client

    def object_action(self, context, objinst, objmethod, args, kwargs):
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
        return self._conductor.object_class_action_versions(
            context, objname, objmethod, object_versions, args, kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        return self._conductor.object_backport_versions(context, objinst,
                                                        object_versions)
