"""Many agents at once against two real conductors, one killed mid-storm.

Runs ``tools/bench/bootstorm.py`` on a small number of hosts: the
conductors, cyborg-api and Placement are real processes on MariaDB,
PostgreSQL and RabbitMQ; the agents run the real report code. The bench
exits non-zero when a host's rows are missing, duplicated or differ from
what its driver reports, or when a process logged a traceback.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.functional

BENCH = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'bench', 'bootstorm.py')


def _run(tmp_path, *args):
    out = tmp_path / 'figures.json'
    proc = subprocess.run(
        [sys.executable, BENCH, '--json', str(out), '--logs',
         str(tmp_path / 'logs'), '--requests', '3', *args],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-4000:]
    return json.loads(out.read_text())['results']


def test_two_conductors_converge_after_one_is_killed(tmp_path):
    result, = _run(tmp_path, '--hosts', '40', '--devices', '4',
                   '--conductors', '2', '--concurrency', '40',
                   '--kill-conductor-after', '1')
    storm = result['bootstorm']
    assert storm['unconverged'] == 0
    # NOTE(bench): every conductor's peak RSS, the killed one's included.
    rss = storm['conductor_rss_mib']
    assert sorted(rss) == ['cyborg-conductor-1', 'cyborg-conductor-2'], rss
    assert all(mib > 0 for mib in rss.values()), rss
    assert result['steady']['placement_requests'] == 0
    assert result['teardown']['unconverged'] == 0
