"""A create the API sends again (past a stopped conductor) makes its ARQs
once: its key fixes their uuids."""

import threading
from unittest import mock

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor.bind import store as arq_store
from cyborg.db import arqs as arq_db
from cyborg.db import models
from cyborg.objects import device_profile as profile_obj

P1 = 'p1'


@pytest.fixture
def profile(db, ctx):
    profile_obj.DeviceProfile(
        ctx, uuid=uuidutils.generate_uuid(), name='fpga1-vgpu2',
        groups=[{'resources:FPGA': '1'}, {'resources:VGPU': '2'}]).create()
    return 'fpga1-vgpu2'


def _uuids(db):
    with db.connect() as conn:
        return sorted(conn.execute(
            sa.select(models.AcceleratorRequest.uuid)).scalars())


def test_a_create_sent_again_answers_what_its_first_run_made(
        db, ctx, profile, override):
    # At the limit after the first run: the second is no new demand.
    override('limits', {'FPGA': '1', 'VGPU': '2'}, group='quota')
    key = uuidutils.generate_uuid()
    first = arq_store.create(ctx, profile, P1, key)
    again = arq_store.create(ctx, profile, P1, key)
    assert [(a.uuid, a.device_profile_group_id) for a in again] == \
        [(a.uuid, a.device_profile_group_id) for a in first]
    assert [a.device_profile_group_id for a in first] == [0, 1, 1]
    assert _uuids(db) == sorted(a.uuid for a in first)
    # Another create (another key) is a new demand, over the limit.
    with pytest.raises(Exception, match='[Qq]uota'):
        arq_store.create(ctx, profile, P1, uuidutils.generate_uuid())
    # Without a key every create is new.
    override('limits', {}, group='quota')
    arq_store.create(ctx, profile, P1)
    assert len(_uuids(db)) == 6


def test_a_create_racing_its_own_resend_makes_one_set(db, ctx, profile):
    key = uuidutils.generate_uuid()
    real_create = arq_db.create
    barrier = threading.Barrier(2)

    def both_past_the_first_look(*args, **kwargs):
        barrier.wait(timeout=5)
        return real_create(*args, **kwargs)

    answers = []

    def send():
        from cyborg import context as cyborg_context
        own = cyborg_context.get_admin_context()
        answers.append(sorted(a.uuid for a in
                              arq_store.create(own, profile, P1, key)))

    with mock.patch.object(arq_db, 'create', both_past_the_first_look):
        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(answers) == 2 and answers[0] == answers[1]
    assert _uuids(db) == answers[0]


def test_a_duplicate_without_a_key_is_not_hidden(db, ctx, profile):
    clash = db_exc.DBDuplicateEntry(columns=['uuid'])
    with mock.patch.object(arq_db, 'create', side_effect=clash):
        with pytest.raises(db_exc.DBDuplicateEntry):
            arq_store.create(ctx, profile, P1)


def test_a_pinned_conductor_is_sent_no_key(fake_rpc, override):
    api = conductor_rpcapi.ConductorAPI()
    sent = {}

    def call(_ctxt, method, **kwargs):
        sent.update(kwargs, method=method)
    with mock.patch.object(api.client, 'prepare') as prepare:
        prepare.return_value.call.side_effect = call
        api.create_arqs(None, 'p', P1, key='k')
        assert prepare.call_args.kwargs['version'] == '1.15'
        assert sent['key'] == 'k'
    override('conductor', '1.14', group='upgrade_levels')
    api = conductor_rpcapi.ConductorAPI()
    sent.clear()
    with mock.patch.object(api.client, 'prepare') as prepare:
        prepare.return_value.call.side_effect = call
        api.create_arqs(None, 'p', P1, key='k')
        assert prepare.call_args.kwargs['version'] == '1.4'
    assert 'key' not in sent
    assert not conductor_rpcapi.may_resend('create_arqs', sent)
