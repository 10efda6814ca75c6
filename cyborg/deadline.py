"""Deadlines of RPC calls: stamped by the caller, judged where served."""

import time

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: Keys of a call's context dict: the caller's wall clock (UTC epoch
#: seconds) when it sent the call plus its timeout, and that timeout.
DEADLINE = 'rpc_deadline'
TIMEOUT = 'rpc_timeout'

# NOTE(deadline): a call is judged late by the earlier of two bounds.
# (1) The deadline it carries, plus [DEFAULT] rpc_deadline_margin, against
# this host's wall clock: it catches a call that waited in the broker's
# queue (a conductor stopped or busy before it took the message), as far
# as the two hosts' clocks agree within the margin. (2) Its timeout from
# the moment this process received it, on this process's monotonic clock:
# the caller sent it earlier, so it has given up by then whatever the
# clocks say; this catches a process stopped after it took the message.
# A clock that runs behind the caller's only lets late work through (the
# orphan removal catches what that leaves); one that runs ahead by more
# than the margin drops calls whose callers wait for less than the gap.
# Neither bound is ever judged for a call without a deadline: a cast, or
# a caller older than deadlines. A service that knows its own clock is
# off (a conductor whose clock disagrees with both the database server's
# and its peers') judges by its clock less that offset (set_offset).


_offset = 0.0


def set_offset(seconds):
    """Judge deadlines by this process's wall clock less ``seconds``: how
    far it is known to run ahead (negative: behind) of the others'."""
    global _offset
    _offset = float(seconds)


def offset():
    return _offset


def stamp(values, timeout, now=None):
    """Put the deadline of a call that waits ``timeout`` seconds from
    ``now`` (default: this host's wall clock) in the context dict
    ``values``; returns it."""
    values[DEADLINE] = (time.time() - _offset if now is None else now) + \
        timeout
    values[TIMEOUT] = timeout
    return values


def left(values, now=None):
    """Seconds the caller of a call just received still waits, judged by
    this host's wall clock (see the NOTE); None when it carries no
    deadline. It may be negative: the caller gave up that long ago."""
    try:
        deadline = float(values[DEADLINE])
        timeout = float(values[TIMEOUT])
    except (KeyError, TypeError, ValueError):
        return None
    now = time.time() - _offset if now is None else now
    return min(timeout, deadline + CONF.rpc_deadline_margin - now)


def received(values):
    """When (on ``time.monotonic()``) the caller of a call just received
    stops waiting; None when it carries no deadline."""
    found = left(values)
    return None if found is None else time.monotonic() + found


def late_by(context):
    """Seconds since the caller of ``context``'s call stopped waiting
    (negative while it waits); None when the call carries no deadline."""
    found = getattr(context, 'deadline', None)
    return None if found is None else time.monotonic() - found


def passed(context):
    """Whether the caller of ``context``'s call has stopped waiting."""
    late = late_by(context)
    return late is not None and late >= 0


def check(context, action):
    """Drop ``action`` (what the call was doing, for the log and the
    error) when the caller of ``context``'s call has stopped waiting.

    :raises DeadlineExceeded: logged here once, at INFO.
    """
    if passed(context):
        raise dropped(action, getattr(context, 'request_id', None),
                      late_by(context))


def dropped(action, request_id, late):
    """Log the drop of ``action`` of request ``request_id``, ``late``
    seconds after its caller stopped waiting; the exception to raise."""
    late = '%.1f' % max(late, 0.0)
    LOG.info('Dropped %(action)s of request %(request)s: its caller stopped '
             'waiting %(late)s seconds ago, so nothing of it is done.',
             {'action': action, 'request': request_id, 'late': late})
    return exception.DeadlineExceeded(action=action, late=late)
