"""cyborg-status upgrade check: the clock skew of live services."""

import datetime

from oslo_upgradecheck import upgradecheck
import pytest
import sqlalchemy as sa

from cyborg.cmd import status
from cyborg.db import models

Code = upgradecheck.Code


def _service(engine, host, binary, skew, age=0):
    seen = (datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            - datetime.timedelta(seconds=age))
    with engine.begin() as conn:
        conn.execute(sa.insert(models.Service.__table__).values(
            host=host, binary=binary, report_count=1, disabled=False,
            last_seen_up=seen, clock_skew=skew))


@pytest.fixture
def checks(db):
    return status.Checks()


def test_clocks_within_the_threshold(checks, db):
    _service(db, 'ctl1', 'cyborg-conductor', 0.2)
    _service(db, 'ctl2', 'cyborg-conductor', -9.9)
    # NOTE(tests): agents and older conductors measure nothing.
    _service(db, 'node1', 'cyborg-agent', None)
    result = checks._check_clock_skew()
    assert result.code == Code.SUCCESS
    assert 'within 10.0 seconds' in result.details


def test_a_live_conductor_too_far_off_is_reported(checks, db, override):
    override('clock_skew_threshold', 5, group='conductor')
    _service(db, 'ctl1', 'cyborg-conductor', 120.04)
    _service(db, 'ctl2', 'cyborg-conductor', -6)
    _service(db, 'ctl3', 'cyborg-conductor', 1)
    # A stopped conductor's last measure is no news.
    _service(db, 'ctl4', 'cyborg-conductor', 300, age=3600)
    result = checks._check_clock_skew()
    assert result.code == Code.WARNING
    assert ('cyborg-conductor on ctl1 (+120.0 s), cyborg-conductor on ctl2 '
            '(-6.0 s).' in result.details)
    assert 'ctl3' not in result.details and 'ctl4' not in result.details
    assert 'clock_skew_threshold (5.0 s)' in result.details


def test_the_check_is_listed():
    assert 'Clock skew' in [name for name, _ in status.Checks._upgrade_checks]
