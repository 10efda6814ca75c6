"""/v1 accelerators: views, specs and attachment records.

The transactions live in ``cyborg.db.accelerators``; the attach and detach
work on hosts is in ``cyborg.conductor.attachments``. Views go through the
``Accelerator`` object, and out as its dict (``as_view``).
"""

from cyborg.db import accelerators as accelerator_db
from cyborg.objects import accelerator as accelerator_obj

AGENT_BINARY = accelerator_db.AGENT_BINARY
INSTANCE = accelerator_db.INSTANCE
HOST = accelerator_db.HOST
ATTACHING = accelerator_db.ATTACHING
ATTACHED = accelerator_db.ATTACHED
DETACHING = accelerator_db.DETACHING
SPEC_KEYS = accelerator_db.SPEC_KEYS

default_spec = accelerator_db.default_spec
may_name = accelerator_db.may_name
instance_projects = accelerator_db.instance_projects
start_attach = accelerator_db.start_attach
set_attach_state = accelerator_db.set_attach_state
clear_attachment = accelerator_db.clear_attachment
start_detach = accelerator_db.start_detach
recover = accelerator_db.recover


def _objects(context, views):
    return [accelerator_obj.Accelerator.from_view(context, view)
            for view in views]


def _view(context, view):
    # NOTE(accelerators): checked by the object's fields, answered as the
    # dict RPC 1.6 clients read.
    return accelerator_obj.Accelerator.from_view(context, view).as_view()


def list_all(context):
    """Every accelerator: discovered deployables, then operators' records.
    """
    return [obj.as_view() for obj in _objects(
        context, accelerator_db.list_all(context))]


def get(context, uuid):
    """:raises AcceleratorNotFound:"""
    return _view(context, accelerator_db.get(context, uuid))


def create(context, name, uuid=None, project_id=None):
    """An operator's record of an accelerator no agent sees.

    :raises DuplicateAccelerator: the name or uuid is taken.
    """
    return _view(context, accelerator_db.create(context, name, uuid,
                                                project_id))


def update_spec(context, uuid, key, value, revision=None):
    """Set the whole spec (``key`` None) or one key of it.

    :raises AcceleratorNotFound, AcceleratorSpecManaged,
        AcceleratorChanged: nothing is written.
    """
    return _view(context, accelerator_db.update_spec(context, uuid, key,
                                                     value, revision))
