"""The in-process benchmarks of tools/bench run at a tiny size, so they
cannot rot: each must finish, say what it measured and meet its checks.

Those that start real services run in the functional suite instead:
bootstorm.py (test_bootstorm.py) and chaos.py (test_chaos.py)."""

import os
import re
import subprocess
import sys

TOOLS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools')
_MS = r'median [\d.]+ ms, p90 [\d.]+ ms, min [\d.]+ ms'


def run_tool(tmp_path, script, *args, timeout=300):
    """Run a script of tools/ with this interpreter; its stdout."""
    proc = subprocess.run(
        [sys.executable, os.path.join(TOOLS, script), *args],
        capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


def test_agent_discovery_bench(tmp_path):
    out = run_tool(tmp_path, 'bench/agent_discovery.py', '--tiny',
                   '--passes', '2')
    lines = out.splitlines()
    assert re.search(r'^Simulated host: 15 PCI functions \(5 VFs, 6 mdev '
                     r'types\) -> 6 devices, \d+ deployables, \d+ attach '
                     r'handles$', out, re.M), out
    assert re.search(r'^Full discovery \(new tracker, fresh sysfs scan; 2 '
                     r'passes\): %s$' % _MS, out, re.M), out
    unchanged = [line for line in lines
                 if line.startswith('Unchanged re-discovery')]
    assert len(unchanged) == 2, out
    for line in unchanged:
        assert re.search(r'2 passes, 2 from the discovery cache\): %s$'
                         % _MS, line), line
    assert ('Unchanged passes come from the cache and report what the '
            'full pass did: yes') in lines
    assert re.search(r'^Targets \(medians, sysfs rules\): full <= 100 ms '
                     r'(met|NOT met), unchanged <= 20 ms (met|NOT met)$',
                     out, re.M), out
    assert re.search(r'^First report: \d+ SQL statements, \d+ writes$',
                     out, re.M), out
    assert ('Unchanged host (agent heartbeat): 2 SQL statements, 1 writes '
            '(the liveness UPDATE), 0 inventory writes') in lines
    assert re.search(r'^Whole report with nothing changed: \d+ SQL '
                     r'statements, 1 writes', out, re.M), out
    assert lines[-1].startswith('Command: python ')
    assert not [name for name in os.listdir(tmp_path)
                if name.startswith('cyborg-bench-')]


def test_health_checks_bench(tmp_path):
    out = run_tool(tmp_path, 'bench/health_checks.py', '--tiny',
                   '--passes', '3')
    lines = out.splitlines()
    assert re.search(r'^Fixture host: mixed-host, \d+ PCI functions -> 6 '
                     r'devices$', out, re.M), out
    assert 'States: ok 6; sources that ran: pci, aer, link, hwmon, qat' \
        in lines
    for label in ('Health checks \\(3 reports\\)',
                  'Added by the health checks per report',
                  'Telemetry sample per report'):
        assert re.search(r'^%s: median [\d.-]+ ms, p95 [\d.-]+ ms, min '
                         r'[\d.-]+ ms$' % label, out, re.M), out
    assert re.search(r'^Target \(medians\): .* <= 5 ms per report: '
                     r'(met|NOT met) ', out, re.M), out
    assert 'Every fixture device is healthy: yes' in lines
    assert 'A fatal AER count written into a copy fails its device: yes' \
        in lines
    assert lines[-1].startswith('Command: python ')
    assert not [name for name in os.listdir(tmp_path)
                if name.startswith('cyborg-bench-')]


def test_placement_sync_bench(tmp_path):
    out = run_tool(tmp_path, 'bench/placement_sync.py', '--deployables', '2')
    lines = out.splitlines()
    assert re.search(r'^first sync \(2 new providers\) +\d+ +\d+ +[\d.]+$',
                     out, re.M), out
    assert re.search(r'^sync of the unchanged host +0 +0 +[\d.]+$', out,
                     re.M), out
    assert 'Target: at most 3 requests per new provider: 3.00, met' in lines
    assert 'Target: 0 requests for an unchanged host: 0 and 0, met' in lines
    assert re.search(r'^Placement holds 2 providers under bench-host: ', out,
                     re.M), out
    assert lines[-1] == ('Command: python %s --deployables 2'
                         % os.path.join(TOOLS, 'bench/placement_sync.py'))
