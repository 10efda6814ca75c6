"""Runs one of Cyborg's console scripts with its wall clock moved.

``python -m cyborg.tests.skewed_run SECONDS SCRIPT ARGS...`` puts this
process's ``time.time`` and ``datetime.datetime.now``/``utcnow`` SECONDS
ahead (negative: behind) before anything imports them, then runs the
console script SCRIPT (cyborg-conductor...) with ARGS, as on a host whose
NTP is broken. The monotonic clock, which no two processes compare, is
left alone (libfaketime cannot: Python's sleeps and timed waits then
fail or never end).
"""

import datetime
import importlib.metadata
import sys
import time

from cyborg.tests import skewed_clock


def skew(seconds):
    """Move this whole process's wall clock ``seconds`` ahead."""
    real_time, real_time_ns = time.time, time.time_ns
    moved = skewed_clock.skewed_datetime(seconds)
    time.time = lambda: real_time() + seconds
    time.time_ns = lambda: real_time_ns() + int(seconds * 1e9)
    datetime.datetime = moved


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    seconds, script = float(argv[0]), argv[1]
    skew(seconds)
    (entry,) = [ep for ep in importlib.metadata.entry_points(
        group='console_scripts') if ep.name == script]
    sys.argv = [script] + argv[2:]
    return entry.load()()


if __name__ == '__main__':
    sys.exit(main())
