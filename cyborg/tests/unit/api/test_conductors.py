"""``GET /v2/conductors`` (2.11): liveness by the database's clock, skew."""

import datetime

import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import skewed_clock
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header

V211 = version_header('accelerator 2.11')


def _service(engine, host, age, skew, binary='cyborg-conductor'):
    seen = (datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            - datetime.timedelta(seconds=age))
    with engine.begin() as conn:
        conn.execute(sa.insert(models.Service.__table__).values(
            host=host, binary=binary, report_count=1, disabled=False,
            last_seen_up=seen, clock_skew=skew, version='18.0.0',
            rpc_version='1.14'))


def test_conductors_list(api, db, monkeypatch):
    _service(db, 'ctl-1', 5, 0.004)
    _service(db, 'ctl-2', 500, 121.5)
    _service(db, 'node1', 5, None, binary='cyborg-agent')
    # NOTE(tests): the API host's clock ten minutes behind changes
    # nothing: liveness is the database's judgement.
    skewed_clock.skew(monkeypatch, -600)
    conductors = api.get('/v2/conductors', headers=V211).json['conductors']
    assert [c['host'] for c in conductors] == ['ctl-1', 'ctl-2']
    one, two = conductors
    assert one['status'] == 'up' and two['status'] == 'down'
    assert (one['clock_skew'], two['clock_skew']) == (0.004, 121.5)
    assert one['version'] == '18.0.0' and one['rpc_version'] == '1.14'
    assert one['last_heartbeat'].endswith('+00:00')


def test_conductors_need_2_11_and_an_administrator(api, db):
    response = api.get('/v2/conductors',
                       headers=version_header('accelerator 2.10'),
                       expect_errors=True)
    assert response.status_int == 404
    assert '2.11' in fault(response)['faultstring']
    response = api.get('/v2/conductors', headers=dict(READER, **V211),
                       expect_errors=True)
    assert response.status_int == 403
