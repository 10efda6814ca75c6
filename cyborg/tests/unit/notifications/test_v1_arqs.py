"""The ARQ of a /v1 attach (no device profile) is listed and announced."""

from oslo_utils import uuidutils

from cyborg.conductor.bind import store as arq_store
from cyborg.conductor.bind import workflow as bind_workflow
from cyborg.db import arqs as arq_db
from cyborg.tests import arq_rows

PROJECT = 'p1'


def _attached(ctx):
    """A /v1 attach's ARQ, bound to a new instance: (uuid, instance)."""
    uuid = arq_db.create_for_attach(ctx, PROJECT)
    instance = uuidutils.generate_uuid()
    arq_store.bind_without_handle(ctx, uuid, instance)
    return uuid, instance


def test_an_arq_without_a_profile_is_listed_as_it_is_got(db, ctx):
    uuid, instance = _attached(ctx)
    (profiled,) = arq_rows.initial(db, 1)
    got = arq_store.get(ctx, uuid, PROJECT)
    assert not got.device_profile_name
    listed = {arq.uuid: arq for arq in arq_store.list_arqs(ctx)}
    assert set(listed) == {uuid, profiled}
    assert listed[uuid].obj_to_primitive() == got.obj_to_primitive()
    assert [arq.uuid for arq in arq_store.list_arqs(
        ctx, PROJECT, instance_uuid=instance)] == [uuid]
    assert [arq.uuid for arq in arq_store.list_arqs(
        ctx, PROJECT, resolved=True)] == [uuid]
    # NOTE(tests): one page at a time, it is there too.
    (first,) = arq_store.list_arqs(ctx, limit=1)
    (second,) = arq_store.list_arqs(ctx, limit=1, marker=first.uuid)
    assert {first.uuid, second.uuid} == {uuid, profiled}


def test_deleting_an_instances_arqs_announces_one_without_a_profile(
        db, ctx, notes):
    uuid, instance = _attached(ctx)
    assert bind_workflow.delete(ctx, None, instance, PROJECT, True,
                                agent_api=None) == 1
    (deleted,) = notes('accelerator.arq.delete')
    data = deleted['payload']['cyborg_object.data']
    assert data['uuid'] == uuid
    assert data['instance_uuid'] == instance
