"""Claims on devices around host-side work, respected by every conductor."""

import contextlib
import threading
import time

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging

from cyborg import exception
from cyborg.db import claims as claim_db

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: The workflows that claim a device (what a refusal names).
PROGRAM = 'program'
DRIVER_INSTALL = 'driver install'
DRIVER_UPDATE = 'driver update'
DRIVER_UNINSTALL = 'driver uninstall'
MODE_SWITCH = 'mode switch'
ACTIVATE = 'activate'
SCRUB = 'scrub'

#: Seconds between two tries of a claim that may wait.
POLL = 0.5

# NOTE(claims): (conductor host, device uuid) of the claims this process
# holds now; a live conductor's periodic pass clears the others it finds
# in its name (a release the database did not take).
_HELD = set()
_LOCK = threading.Lock()


def owner_of(owner):
    """The conductor a claim is made in the name of: ``owner``, else this
    service's ``[DEFAULT] host``."""
    return owner or CONF.host


def _take(context, uuids, workflow, owner, wait):
    deadline = time.monotonic() + wait
    while True:
        try:
            claim_db.claim(context, uuids, workflow, owner)
            return
        except exception.DeviceClaimed as exc:
            if time.monotonic() >= deadline:
                LOG.info('%s refused: %s', workflow.capitalize(),
                         exception.message_of(exc))
                raise
        time.sleep(POLL)


@contextlib.contextmanager
def held(context, uuids, workflow, owner=None, wait=0):
    """Claim devices for ``workflow`` while the block runs; released in
    any case when it ends.

    :param uuids: one device uuid, or several (all claimed, or none).
    :param owner: this conductor's host (``owner_of``).
    :param wait: seconds to try again while another holds one.
    :raises DeviceClaimed: another workflow holds one; nothing ran.
    """
    uuids = [uuids] if isinstance(uuids, str) else sorted(set(uuids))
    owner = owner_of(owner)
    _take(context, uuids, workflow, owner, wait)
    with _LOCK:
        _HELD.update((owner, uuid) for uuid in uuids)
    try:
        yield
    finally:
        try:
            claim_db.release(context, uuids, workflow, owner)
        except db_exc.DBError as exc:
            # NOTE(claims): left in the database; this conductor's next
            # periodic pass clears it (clear_forgotten).
            LOG.warning('The %s claim of conductor %s on devices %s was '
                        'not released (%s); it is cleared within %d '
                        'seconds', workflow, owner, ', '.join(uuids),
                        type(exc).__name__, CONF.conductor.takeover_after)
        finally:
            with _LOCK:
                _HELD.difference_update((owner, uuid) for uuid in uuids)


def clear_stale(context, binary, host, at_start=False):
    """Clear, and log, the claims of conductors that stopped heartbeating
    for ``[conductor] takeover_after``; at this conductor's start, those of
    a former process of its host too.

    :returns: ``[(device uuid, conductor, workflow)]`` cleared.
    """
    cleared = claim_db.clear_stale(context, binary,
                                   CONF.conductor.takeover_after,
                                   mine=host if at_start else None)
    for uuid, holder, workflow in cleared:
        LOG.warning('Cleared the %s claim on device %s of conductor %s, '
                    'which stopped; what it did on the host may be '
                    'unfinished', workflow, uuid, holder)
    return cleared


def clear_forgotten(context, host):
    """Clear, and log, claims in this conductor's name that no workflow
    of this process holds (their release failed) and that are older than
    ``[conductor] takeover_after``."""
    with _LOCK:
        keep = {uuid for owner, uuid in _HELD if owner == host}
    cleared = claim_db.clear_forgotten(context, host, keep,
                                       CONF.conductor.takeover_after)
    for uuid, workflow in cleared:
        LOG.warning('Cleared the %s claim on device %s that this conductor '
                    'did not release', workflow, uuid)
    return cleared
