"""tools/bench/api_v2.py at a tiny size, so that it cannot rot.

It starts cyborg-all-in-one twice (real processes, as
test_all_in_one.py does), lists deployables, boots instances as Nova
does and checks that every ARQ got its own handle.
"""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.functional

BENCH = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'bench', 'api_v2.py')


def test_api_v2_bench_at_a_tiny_size(tmp_path):
    proc = subprocess.run(
        [sys.executable, BENCH, '--deployables', '2', '--requests', '2',
         '--clients', '2', '--boots', '1', '--instances', '2',
         '--workers', '1'],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp_path)))
    out = proc.stdout
    assert proc.returncode == 0, out[-6000:] + proc.stderr[-4000:]
    lines = out.splitlines()
    assert '1. GET /v2/deployables: 2 deployables, response' in out
    assert re.search(r'^   sequential \(2 requests\) +[\d.]+ +[\d.]+ +'
                     r'[\d.]+$', out, re.M), out
    assert re.search(r'^   whole sequence: +p50 [\d.]+ ms, p95 [\d.]+ ms',
                     out, re.M), out
    assert ("   ARQs on the server: 2 (2 Bound); every instance's ARQ "
            "Bound: yes") in lines
    assert '   no handle given twice: yes (2 Bound ARQs, 2 distinct ' \
        'handles)' in lines
    assert 'The server logged' not in out
    assert lines[-1].startswith('Command: python ')
