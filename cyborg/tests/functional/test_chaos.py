"""A short chaos bench: Nova boots through a killed conductor and outages.

Runs ``tools/bench/chaos.py`` at a small size: three conductors, three
agents and twenty boots in flight through a SIGKILL of the busiest
conductor, restarts of the bench's own RabbitMQ node and MariaDB server,
and Placement stopped for a few seconds. The bench exits non-zero when a
boot is lost, an ARQ stuck or an attach handle shared or leaked.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.functional

BENCH = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'bench', 'chaos.py')


def test_short_chaos_loses_nothing(tmp_path):
    out = tmp_path / 'figures.json'
    proc = subprocess.run(
        [sys.executable, BENCH, '--json', str(out), '--logs',
         str(tmp_path / 'logs'), '--conductors', '3', '--agents', '3',
         '--boots', '20', '--devices', '2', '--down', '2',
         '--placement-down', '3', '--takeover-after', '6',
         '--heartbeat-interval', '2', '--report-interval', '2',
         '--warmup', '5', '--resolve-timeout', '60'],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-4000:]
    result = json.loads(out.read_text())
    assert [row['fault'] for row in result['rows']] == [
        'conductor kill -9', 'RabbitMQ restart', 'database restart',
        'Placement down']
    for row in result['rows']:
        assert (row['lost'], row['stuck'], row['shared'], row['leaked']) \
            == (0, 0, 0, 0), row
        assert row['placement_s'] is not None, row
    takeover = result['takeover']
    assert takeover['held'] >= 1, takeover
    assert takeover['seconds'] <= takeover['limit'] == 16, takeover
    assert result['final']['left_states'] == {}
    assert proc.stdout.splitlines()[-2].startswith('Command: python ')
