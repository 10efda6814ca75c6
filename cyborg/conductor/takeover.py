"""Adopting the ARQ work of conductors that stopped heartbeating."""

import contextlib
import threading
import time

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging

from cyborg import states
from cyborg.conductor import hostwork
from cyborg.db import ownership

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

# NOTE(takeover): (conductor host, ARQ uuid) of the work this process is
# doing now; a conductor resuming its own stalled work skips these, and
# two paths (a late cast, the periodic resume) never do one ARQ at once.
_IN_FLIGHT = set()
# NOTE(takeover): (conductor host, ARQ uuid) of events Nova took that the
# database could not record as sent (it was down): recorded by the next
# resume, and never sent again by this process meanwhile.
_UNRECORDED = set()
_LOCK = threading.Lock()


@contextlib.contextmanager
def holding(host, uuids):
    """Mark ``uuids`` in flight for conductor ``host``; yields those no
    other thread of this process is working on."""
    with _LOCK:
        mine = [uuid for uuid in dict.fromkeys(uuids)
                if (host, uuid) not in _IN_FLIGHT]
        _IN_FLIGHT.update((host, uuid) for uuid in mine)
    try:
        yield mine
    finally:
        with _LOCK:
            _IN_FLIGHT.difference_update((host, uuid) for uuid in mine)


class Sight:
    """Since when this conductor has reached the database without a break.

    Others' heartbeats stop with the database too: when it returns, every
    conductor's last one is as old as the outage, and the first to look
    would take the others' live work. They are judged dead only once this
    conductor has reached the database for ``takeover_after``, long
    enough for a live one to heartbeat again.
    """

    def __init__(self):
        # NOTE(takeover): a conductor starts with the database answering.
        self._since = float('-inf')

    def lost(self):
        self._since = None

    def reached(self):
        if self._since is None:
            self._since = time.monotonic()

    def steady_for(self, seconds):
        return (self._since is not None and
                time.monotonic() - self._since >= seconds)


def _unowned_after():
    # NOTE(takeover): a bind that records no owner (started by an older
    # release) may still be running; its longest host work is programming.
    return (CONF.conductor.program_timeout +
            CONF.conductor.agent_rpc_timeout + CONF.conductor.takeover_after)


def adopt(context, conductor, binary, at_start=False):
    """Take, and finish, the binds and unbinds of dead conductors.

    :param conductor: this conductor's manager (``host``, ``agent_api``,
        ``finish_binds``).
    :param at_start: this conductor has just started: what a former
        process on its host held is abandoned too.
    :returns: the uuids of the ARQs this conductor took.
    """
    unowned_after = _unowned_after()
    found = ownership.orphaned(
        context, binary, CONF.conductor.takeover_after, unowned_after,
        mine=conductor.host if at_start else None)
    binds, unbinds, resolved = [], [], []
    for uuid, owner, _read in found:
        state = ownership.take(context, uuid, owner, conductor.host,
                               unowned_after)
        if state is None:
            # NOTE(takeover): another conductor got it first, its owner
            # finished it meanwhile, or holds its row locked still.
            continue
        LOG.warning('Took over the %s of ARQ %s from conductor %s, which '
                    'stopped', _WORK.get(state, 'event to Nova'), uuid,
                    owner or '(unknown)')
        _sort(uuid, state, binds, unbinds, resolved)
    _finish(context, conductor, binds, unbinds, resolved)
    return binds + unbinds + resolved


_WORK = {states.ARQ_BIND_STARTED: 'bind', states.ARQ_UNBOUND: 'unbind'}


def _sort(uuid, state, binds, unbinds, resolved):
    if state == states.ARQ_BIND_STARTED:
        binds.append(uuid)
    elif state == states.ARQ_UNBOUND:
        unbinds.append(uuid)
    else:
        resolved.append(uuid)


def _finish(context, conductor, binds, unbinds, resolved):
    for uuid in unbinds:
        finish_unbind(context, [uuid], conductor)
    if binds:
        conductor.finish_binds(context, binds)
    if resolved:
        announce(context, resolved, conductor)


def resume(context, conductor):
    """Finish this conductor's own work that stalled: a bind whose cast
    or transaction an outage lost, an unbind cut short, an event Nova was
    not sent. What this process is doing now is left alone.

    :returns: the uuids resumed.
    """
    _record_told(context, conductor.host)
    found = [(uuid, state) for uuid, state in ownership.stalled(
        context, conductor.host, CONF.conductor.takeover_after)
        if (conductor.host, uuid) not in _IN_FLIGHT]
    if not found:
        return []
    LOG.warning('Resuming %d ARQ operations of this conductor that did '
                'not finish', len(found))
    binds, unbinds, resolved = [], [], []
    for uuid, state in found:
        _sort(uuid, state, binds, unbinds, resolved)
    _finish(context, conductor, binds, unbinds, resolved)
    return [uuid for uuid, _state in found]


def announce(context, uuids, conductor):
    """Send Nova the events of resolved binds this conductor holds, then
    let them go."""
    with holding(conductor.host, uuids) as mine:
        send_events(context, mine, conductor.host, conductor.tell_nova)


def send_events(context, uuids, host, tell_nova):
    """Have ``tell_nova`` send the events of those of ``uuids`` that
    conductor ``host`` still holds, resolved; then let them go."""
    # NOTE(takeover): read again just before sending: a conductor that
    # was stopped after its binds ended finds their events taken over by
    # another, which has sent them; sending too would tell Nova twice.
    results = ownership.resolved(context, uuids, host)
    with _LOCK:
        sent = [uuid for uuid in results if (host, uuid) in _UNRECORDED]
    for uuid in sent:
        del results[uuid]
    if not results:
        return
    heard = tell_nova(results)
    try:
        told(context, heard, [u for u in results if u not in heard], host)
    except db_exc.DBError:
        # NOTE(takeover): Nova has these events; were they sent again when
        # the database returns, Nova would hear of each bind twice. Those
        # Nova did not take stay stalled, and resume sends them.
        with _LOCK:
            _UNRECORDED.update((host, uuid) for uuid in heard)
        LOG.warning('Nova took the events of ARQs %s, but the database '
                    'could not record it; recorded once it answers',
                    ', '.join(sorted(heard)))


def _record_told(context, host):
    """Record the events Nova took while the database was down."""
    with _LOCK:
        pending = sorted(uuid for owner, uuid in _UNRECORDED
                         if owner == host)
    if pending:
        ownership.told(context, pending, host)
        with _LOCK:
            _UNRECORDED.difference_update((host, uuid) for uuid in pending)
        LOG.info('Recorded the events Nova took of ARQs %s',
                 ', '.join(pending))


def finish_unbind(context, uuids, conductor, released=None):
    """Have the agents release the unbound ARQs' handles, then free them.

    :param released: the handles to release, when the caller has them.
    """
    with holding(conductor.host, uuids) as mine:
        if not mine:
            return
        if released is None:
            released = [handle for uuid in mine for handle in
                        ownership.unbind_job(context, uuid, conductor.host)]
        hostwork.release(context, released, conductor.agent_api)
        ownership.finish_unbind(context, mine, conductor.host)


def holds(context, job, host):
    """Whether conductor ``host`` holds the bind of ``job`` (a bind_job);
    one no conductor holds (an older release's) it takes."""
    if job['owner'] is None:
        return ownership.claim(context, job['uuid'], host)
    return job['owner'] == host


def told(context, heard, unheard, host):
    """Nova has the events of ``heard``: conductor ``host`` lets them go;
    ``unheard`` are sent again after ``[conductor] takeover_after``."""
    ownership.told(context, heard, host)
    ownership.retry_later(context, unheard, host)
