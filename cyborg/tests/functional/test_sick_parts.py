"""A short run of the hung-conductor and broker-outage bench.

Runs ``tools/bench/sick_parts.py --tiny``: two conductors and one API on a
MariaDB server and a RabbitMQ node of the bench's own, four clients
listing, creating and deleting ARQs through a conductor SIGSTOPped and a
broker stopped. The bench exits non-zero on any 500 and on orphan ARQs
the conductors' removal leaves; its figures are judged in the high
availability guide, not here.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.functional

BENCH = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'bench', 'sick_parts.py')


def test_short_sick_parts_answers_no_500_and_leaves_nothing(tmp_path):
    out = tmp_path / 'figures.json'
    proc = subprocess.run(
        [sys.executable, BENCH, '--tiny', '--orphan-age', '5', '--json',
         str(out), '--logs', str(tmp_path / 'logs')],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-4000:]
    result = json.loads(out.read_text())
    assert [row['phase'] for row in result['rows']] == [
        'baseline', 'hung conductor', 'after the hang', 'broker down',
        'broker back']
    assert result['orphans_left'] == [] and result['undeleted'] == []
    for row in result['rows']:
        assert '500' not in row['requests'], row
    # NOTE(tests): with every part well, every request succeeded.
    assert set(result['rows'][0]['requests']) <= {'200', '201', '204'}
    assert result['rows'][0]['ok_per_s'] > 0
    assert result['rows'][4]['first_ok_after_s'] is not None


def _sick_parts():
    bench_dir = os.path.dirname(BENCH)
    sys.path.insert(0, bench_dir)
    try:
        import sick_parts
    finally:
        sys.path.remove(bench_dir)
    return sick_parts


@pytest.mark.parametrize('full_rate_after, settle, wanted', [
    (2, 40, []),
    (None, 4, []),
    (None, 40, ["service not back at 80 % of the baseline within 10 s of "
                "the broker's return (None s)"]),
    (14, 40, ["service not back at 80 % of the baseline within 10 s of "
              "the broker's return (14 s)"]),
])
def test_the_broker_return_is_judged_when_watched_long_enough(
        full_rate_after, settle, wanted):
    result = {'rows': [{'phase': 'broker back', 'requests': {'200': 1},
                        'full_rate_after_s': full_rate_after}],
              'orphans_left': [], 'undeleted': []}
    assert _sick_parts()._verdict(result, settle) == wanted
