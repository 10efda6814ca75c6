"""What the benches read of processes from /proc: CPU time and memory."""

import os

_TICKS = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pid):
    """User plus system CPU seconds of a process (None once it is gone)."""
    try:
        with open('/proc/%d/stat' % pid) as stat:
            fields = stat.read().rpartition(')')[2].split()
    except (OSError, ValueError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def peak_rss_kib(pid):
    """A process's peak resident memory (``VmHWM``, kB); None once gone."""
    try:
        with open('/proc/%d/status' % pid) as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def pids_named(*names):
    """Pids of the processes whose command name is one of ``names``."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/comm' % entry) as comm:
                if comm.read().strip() in names:
                    found.append(int(entry))
        except OSError:
            continue
    return found


class CpuMeter:
    """CPU seconds of groups of processes between two samples.

    A group is a list of pids, or a callable returning one (for services
    whose processes come and go, such as PostgreSQL's backends). The CPU
    of a process that exits between the samples is lost unless its last
    figure was put in ``final`` (a conductor the bench kills). ``other``
    is the machine's busy CPU time that no group used: other work on a
    shared machine.
    """

    OTHER = 'other processes'

    def __init__(self, groups):
        self.groups = groups
        self.final = {}

    def sample(self):
        found = {}
        for name, pids in self.groups.items():
            pids = pids() if callable(pids) else pids
            found[name] = {pid: cpu_seconds(pid) for pid in pids}
        return found, _busy_seconds()

    def since(self, then):
        return self.between(then, self.sample())

    def between(self, then, now):
        """CPU seconds of each group between two samples."""
        (then, busy_then), (now, busy_now) = then, now
        result = {}
        for name, pids in now.items():
            total = 0.0
            for pid in set(pids) | set(then[name]):
                cpu = pids.get(pid)
                if cpu is None:
                    cpu = self.final.get(pid)
                if cpu is not None:
                    total += cpu - (then[name].get(pid) or 0)
            result[name] = round(total, 2)
        result[self.OTHER] = round(max(
            0.0, busy_now - busy_then - sum(result.values())), 2)
        return result


def _busy_seconds():
    """CPU seconds every CPU of the machine spent busy since boot."""
    with open('/proc/stat') as stat:
        fields = [int(f) for f in stat.readline().split()[1:]]
    # NOTE(bench): user nice system idle iowait irq softirq steal ...;
    # guest time is counted in user already.
    return (sum(fields[:8]) - fields[3] - fields[4]) / _TICKS
