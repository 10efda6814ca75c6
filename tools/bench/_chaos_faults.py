"""The faults the chaos bench injects, each as an operator's bad day has it.

Each ``inject_*(run)`` breaks one part, waits as long as the bench's
arguments say, mends it, and returns what it alone measures (the victim,
binds it held). ``run`` is chaos.Run: the stack, the probe, the options.
"""

import signal
import threading
import time

from cyborg.tests.cluster import stack as cluster_stack

RESOLVED = ('Bound', 'BindFailed', 'Unbound')


class Takeover:
    """Seconds from a fault until each of ``uuids`` (binds a conductor
    held) was resolved by another one, polled in a thread."""

    def __init__(self, probe, uuids, since):
        self.probe = probe
        self.since = since
        self.pending = set(uuids)
        self.seconds = {}
        self.held = len(self.pending)
        self.error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self):
        while self.pending and not self._stop.is_set():
            try:
                states = self.probe.states(sorted(self.pending))
            except Exception as exc:  # noqa: BLE001 - reported, judged
                self.error = str(exc)
                return
            now = time.monotonic()
            for uuid in list(self.pending):
                if states.get(uuid, 'deleted') in RESOLVED + ('deleted',):
                    self.seconds[uuid] = now - self.since
                    self.pending.discard(uuid)
            self._stop.wait(0.25)

    def wait(self, timeout):
        self._thread.join(timeout)
        self._stop.set()
        self._thread.join(5)
        return not self.pending


def _busiest(run, least):
    """(conductor process, uuids of the binds it holds) once one holds
    ``least`` binds (the busiest after ``run.args.busy_wait`` s)."""
    names = {'ctl-%d' % i: proc
             for i, proc in enumerate(run.stack.conductors, 1)}
    deadline = time.monotonic() + run.args.busy_wait
    best = (None, [])
    while True:
        owned = {name: uuids for name, uuids in run.probe.owned().items()
                 if name in names and names[name].alive()}
        if owned:
            name = max(owned, key=lambda n: len(owned[n]))
            if len(owned[name]) >= len(best[1]):
                best = (names[name], owned[name])
        if len(best[1]) >= least or time.monotonic() > deadline:
            return best[0] or run.stack.conductors[0], best[1]
        time.sleep(0.1)


def inject_kill(run):
    """A burst of ``--burst`` boots, then SIGKILL of the conductor holding
    the most binds (at least ``--min-held``); started again once the
    survivors took them over."""
    # NOTE(bench): once the boots have spread out, a conductor holds a
    # few binds at a time; a multi-create gives it the many binds an
    # operator fears losing with it.
    run.boots.burst(run.args.burst)
    victim, held = _busiest(run, run.args.min_held)
    # NOTE(bench): the binds it holds at the moment of the kill are those
    # the survivors must take over; read again with the process frozen.
    victim.proc.send_signal(signal.SIGSTOP)
    held = run.probe.owned().get(_host(run, victim), held)
    start = time.monotonic()
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    takeover = Takeover(run.probe, held, start)
    taken = takeover.wait(run.args.takeover_after + 120)
    run.stack.restart(victim)
    return {'victim': victim.name, 'takeover': takeover, 'taken': taken}


def inject_stop(run):
    """SIGSTOP of the busiest conductor for ``--hang`` seconds."""
    victim, held = _busiest(run, 1)
    start = time.monotonic()
    victim.proc.send_signal(signal.SIGSTOP)
    takeover = Takeover(run.probe, held, start)
    try:
        time.sleep(run.args.hang)
    finally:
        victim.proc.send_signal(signal.SIGCONT)
    taken = takeover.wait(60)
    return {'victim': victim.name, 'takeover': takeover, 'taken': taken}


def inject_clock(run):
    """A conductor restarted with its clock ``--skew`` seconds ahead, for
    ``--skew-for`` seconds, then restarted with the right time."""
    victim = run.stack.conductors[-1]
    run.stack.restart(victim, skew=run.args.skew)
    time.sleep(run.args.skew_for)
    run.stack.restart(victim)
    return {'victim': victim.name}


def inject_rabbit_leader(run):
    """SIGKILL of the RabbitMQ node leading the most queues; started
    again after ``--down`` seconds."""
    leader = run.stack.rabbit.leader()
    leader.kill()
    time.sleep(run.args.down)
    leader.start().wait_started()
    return {'victim': leader.node}


def inject_rabbit_rolling(run):
    """Each RabbitMQ node stopped and started in turn."""
    run.stack.rabbit.rolling_restart()
    return {}


def inject_galera_writer(run):
    """SIGKILL of the Galera node HAProxy writes to; it rejoins after
    ``--down`` seconds."""
    writer = run.stack.haproxy.writer() or run.stack.galera.nodes[0]
    writer.kill()
    time.sleep(run.args.down)
    run.stack.galera.rejoin(writer)
    return {'victim': writer.name}


def inject_haproxy(run):
    """HAProxy stopped and started: every connection through it cut."""
    run.stack.haproxy.restart()
    return {}


def inject_agent_cut(run):
    """One agent's connections to every RabbitMQ node cut for ``--cut``
    seconds."""
    host = run.stack.cuttable[0]
    # NOTE(bench): a cut that finds no connection through the proxies
    # would take nothing away: the row is then not judged as a cut.
    carried = sum(proxy.connections
                  for proxy in run.stack.agent_proxies[host])
    for proxy in run.stack.agent_proxies[host]:
        proxy.cut()
    try:
        time.sleep(run.args.cut)
    finally:
        for proxy in run.stack.agent_proxies[host]:
            proxy.restore()
    return {'victim': host, 'cut_host': host, 'reached': carried > 0}


def inject_database(run):
    """Every Galera node stopped for ``--db-down`` seconds, then the
    cluster started again from the node safe to bootstrap."""
    run.stack.galera.stop_all()
    time.sleep(run.args.db_down)
    run.stack.galera.start_all()
    return {}


def _host(run, proc):
    return 'ctl-%d' % (run.stack.conductors.index(proc) + 1)


FAULTS = (
    ('conductor kill -9', inject_kill),
    ('conductor SIGSTOP', inject_stop),
    ('conductor clock ahead', inject_clock),
    ('RabbitMQ leader kill -9', inject_rabbit_leader),
    ('RabbitMQ rolling restart', inject_rabbit_rolling),
    ('Galera writer kill -9', inject_galera_writer),
    ('HAProxy restart', inject_haproxy),
    ('agent cut from RabbitMQ', inject_agent_cut),
    ('database down', inject_database),
)


def wait_resolved(run, start, end):
    """Wait until every boot whose bind was sent before ``end`` is
    resolved (and Nova told) or lost."""
    cluster_stack.wait_until(
        lambda: all(b.resolved is not None or b.lost is not None
                    for b in run.boots.window(start, end)),
        run.args.resolve_timeout + 60, interval=0.5)
