"""One rule of binds: Placement, the bind and explain agree on each device."""

import logging

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from cyborg import states
from cyborg.common import decisions
from cyborg.conductor import explain
from cyborg.conductor import inventory
from cyborg.db import models
from cyborg.db import services as service_db
from cyborg.objects import device_profile as profile_obj
from cyborg.tests import arq_rows

#: explain's reasons for a deployable that refuses binds.
REFUSED = {explain.HEALTH_FAILED, explain.DRAINING, explain.NOT_READY,
           explain.CLEANING}


class _Placement:
    """Placement offering every provider explain asks about."""

    def __init__(self, offered):
        self.offered = offered

    def candidate_providers(self, resources, required=(), member_of=None):
        return set(self.offered)


@pytest.fixture
def node(ready_device, ctx, db):
    """node1's ready device, its deployable in Placement, its agent up and
    a profile of one of its units; the value is Placement."""
    rp = uuidutils.generate_uuid()
    _set(db, models.Deployable, rp_uuid=rp)
    service_db.heartbeat(ctx, 'node1', inventory.AGENT_BINARY)
    profile_obj.DeviceProfile(ctx, uuid=uuidutils.generate_uuid(),
                              name='one',
                              groups=[{'resources:FPGA': '1'}]).create()
    return _Placement({rp})


def _set(db, table, **values):
    with db.begin() as conn:
        conn.execute(sa.update(table).values(**values))


def _bind(ctx, db, caplog):
    """Bind one new ARQ: (whether it failed, what the conductor logged)."""
    caplog.clear()
    (uuid,) = arq_rows.initial(db, 1)
    with caplog.at_level(logging.WARNING, logger='cyborg.db.arqs'):
        started, failed = arq_rows.bind(ctx, db, [uuid])
    assert sorted(started + failed) == [uuid]
    return failed == [uuid], caplog.text


def _reserved(ctx):
    (state,) = inventory.host_states(ctx, 'node1')
    (decided,) = state['providers'].values()
    return decided['reserved']


def _explained(ctx, placement):
    body = explain.explain(ctx, 'one', 'p1', client=placement)
    (candidate,) = body['groups'][0]['candidates']
    return candidate['reason'], candidate['detail']


@pytest.mark.parametrize('status', [
    states.DEVICE_INACTIVE, states.DEVICE_MAINTAINING, states.DEVICE_LOST,
    states.DEVICE_ACTIVATING, states.DEVICE_DRAINING, states.DEVICE_ERROR])
def test_a_bind_to_a_device_not_ready_fails_with_its_reason(node, ctx, db,
                                                            caplog, status):
    _set(db, models.Device, status=status)
    failed, logged = _bind(ctx, db, caplog)
    assert failed
    assert 'takes no new bind: device is %s' % status in logged


def test_a_bind_to_a_cleaning_deployable_fails_with_its_reason(node, ctx, db,
                                                               caplog):
    _set(db, models.Deployable, cleaning_since=sa.func.now())
    failed, logged = _bind(ctx, db, caplog)
    assert failed
    assert ('takes no new bind: deployable is being scrubbed for its next '
            'tenant') in logged


def test_a_ready_device_of_failed_health_is_refused_by_all_three(
        node, ctx, db, caplog):
    # NOTE(tests): an operator's enable returns a device held by its
    # health to ready; its health stays failed until the next report.
    _set(db, models.Device, health=states.HEALTH_FAILED,
         health_reason='AER: 1 fatal error')
    failed, logged = _bind(ctx, db, caplog)
    assert failed
    assert 'takes no new bind: device health failed' in logged
    assert _reserved(ctx) is True
    assert _explained(ctx, node) == (explain.HEALTH_FAILED,
                                     'AER: 1 fatal error')


@pytest.mark.parametrize('status', states.DEVICE_STATES)
@pytest.mark.parametrize('cleaning', [False, True])
def test_bind_placement_and_explain_agree(node, ctx, db, caplog, status,
                                          cleaning):
    _set(db, models.Device, status=status)
    _set(db, models.Deployable,
         cleaning_since=sa.func.now() if cleaning else None)
    refused = states.refuses_binds(status, cleaning=cleaning)
    reason, _detail = _explained(ctx, node)
    assert _reserved(ctx) is (refused is not None)
    assert (reason in REFUSED) is (refused is not None)
    assert _bind(ctx, db, caplog)[0] is (refused is not None)
    assert decisions.device_reserved(status) is (
        states.refuses_binds(status) is not None)
    assert refused is None or reason == {
        states.REFUSED_DRAINING: explain.DRAINING,
        states.REFUSED_STATUS: explain.NOT_READY,
        states.REFUSED_CLEANING: explain.CLEANING}[refused.cause]


def test_only_a_ready_device_takes_binds():
    assert [status for status in states.DEVICE_STATES
            if states.refuses_binds(status) is None] == [states.DEVICE_READY]
    assert states.refuses_binds(None).reason == (
        'device is of unknown status')


def test_the_causes_come_in_explains_order():
    everything = states.refuses_binds(states.DEVICE_DRAINING,
                                      states.HEALTH_FAILED, cleaning=True)
    assert everything.cause == states.REFUSED_HEALTH
    assert states.refuses_binds(states.DEVICE_DRAINING,
                                cleaning=True).cause == states.REFUSED_DRAINING
    assert states.refuses_binds(states.DEVICE_LOST,
                                cleaning=True).cause == states.REFUSED_STATUS
    assert states.refuses_binds(states.DEVICE_READY,
                                states.HEALTH_DEGRADED, cleaning=True
                                ).cause == states.REFUSED_CLEANING
    assert states.refuses_binds(states.DEVICE_READY,
                                states.HEALTH_DEGRADED) is None
