"""Running remotable object methods for the API and agents (the conductor
side of ``cyborg.conductor.indirection_client``)."""

from cyborg.objects import base as objects_base


def class_action(context, objname, objmethod, object_versions, args,
                 kwargs):
    """A remotable classmethod; the result at the caller's versions."""
    objclass = objects_base.CyborgObject.obj_class_from_name(
        objname, object_versions[objname])
    result = getattr(objclass, objmethod)(context, *args, **kwargs)
    return backport(result, object_versions)


def action(objinst, objmethod, args, kwargs):
    """A remotable method of ``objinst``; returns ``(updates, result)``,
    the fields it changed as primitives and what the method returned."""
    before = objinst.obj_clone()
    result = getattr(objinst, objmethod)(*args, **kwargs)
    updates = {}
    for name, field in objinst.fields.items():
        if not objinst.obj_attr_is_set(name):
            continue
        value = getattr(objinst, name)
        if (not before.obj_attr_is_set(name) or
                getattr(before, name) != value):
            updates[name] = field.to_primitive(objinst, name, value)
    updates['obj_what_changed'] = objinst.obj_what_changed()
    return updates, result


def backport(result, object_versions):
    """``result`` as the caller's object versions have it."""
    # NOTE(objects): a caller that runs older object versions gets its
    # own versions back, so rolling upgrades keep working.
    if isinstance(result, objects_base.CyborgObject):
        wanted = object_versions.get(result.obj_name())
        if wanted and wanted != result.VERSION:
            return result.obj_to_primitive(
                target_version=wanted, version_manifest=object_versions)
    return result
