"""State names, their named groups, transition tables and the bind rule."""

import collections

# --- Devices ----------------------------------------------------------------
# NOTE(states): a discovered device starts inactive (Placement reserves all
# of it) until an operator makes it ready; see the device lifecycle in
# doc/source/contributor/architecture.rst.
DEVICE_INACTIVE = 'inactive'
# Transitional: the agent is running the driver's install step.
DEVICE_ACTIVATING = 'activating'
DEVICE_READY = 'ready'
# Transitional: no new bind, bound ARQs run on; maintaining once the last
# one unbinds (microversion 2.6 shows it; earlier ones say maintaining).
DEVICE_DRAINING = 'draining'
DEVICE_MAINTAINING = 'maintaining'
DEVICE_ERROR = 'error'
DEVICE_LOST = 'lost'

#: Beginning of the status_reason of a device in maintenance; the status it
#: had follows, and enable returns it there.
MAINTAINING_FROM = 'maintenance; was '
#: Beginning of the status_reason of a draining device.
DRAINING_LEFT = 'draining: '

#: Beginning of the status_reason of a device whose driver's install step
#: failed (it is then in error).
ACTIVATION_FAILED = 'activation failed: '

DEVICE_STATES = (DEVICE_INACTIVE, DEVICE_ACTIVATING, DEVICE_READY,
                 DEVICE_MAINTAINING, DEVICE_ERROR, DEVICE_LOST,
                 DEVICE_DRAINING)

DEVICE_TRANSITIONS = {
    DEVICE_INACTIVE: {DEVICE_ACTIVATING, DEVICE_READY, DEVICE_MAINTAINING,
                      DEVICE_ERROR, DEVICE_LOST},
    DEVICE_ACTIVATING: {DEVICE_READY, DEVICE_ERROR, DEVICE_INACTIVE,
                        DEVICE_LOST},
    DEVICE_READY: {DEVICE_MAINTAINING, DEVICE_ERROR, DEVICE_LOST,
                   DEVICE_INACTIVE, DEVICE_DRAINING},
    DEVICE_DRAINING: {DEVICE_MAINTAINING, DEVICE_READY, DEVICE_ERROR,
                      DEVICE_LOST, DEVICE_INACTIVE},
    DEVICE_MAINTAINING: {DEVICE_READY, DEVICE_ERROR, DEVICE_LOST,
                         DEVICE_INACTIVE},
    DEVICE_ERROR: {DEVICE_READY, DEVICE_MAINTAINING, DEVICE_LOST,
                   DEVICE_INACTIVE},
    DEVICE_LOST: {DEVICE_INACTIVE, DEVICE_READY, DEVICE_MAINTAINING,
                  DEVICE_ERROR},
}

# --- Device health ----------------------------------------------------------
# NOTE(states): what the agent's checks say of a device, apart from its
# status; a failed device is held in error (and reserved) until it has been
# healthy for [conductor] health_recover_after checks.
HEALTH_OK = 'ok'
HEALTH_DEGRADED = 'degraded'
HEALTH_FAILED = 'failed'
HEALTH_UNKNOWN = 'unknown'
HEALTH_STATES = (HEALTH_OK, HEALTH_DEGRADED, HEALTH_FAILED, HEALTH_UNKNOWN)
#: Beginning of the status_reason of a device held in error by its health.
UNHEALTHY = 'unhealthy: '
#: ... and of one whose health changed too often: only an operator's enable
#: returns it.
FLAPPING = 'flapping: '
#: ... and of one whose scrub between tenants failed: only an operator's
#: enable returns it.
SCRUB_FAILED = 'scrub failed: '

# --- Accelerator requests ---------------------------------------------------
ARQ_INITIAL = 'Initial'
ARQ_BIND_STARTED = 'BindStarted'
ARQ_BOUND = 'Bound'
ARQ_UNBOUND = 'Unbound'
ARQ_BIND_FAILED = 'BindFailed'
ARQ_UNBIND_FAILED = 'UnbindFailed'
ARQ_DELETING = 'Deleting'

ARQ_STATES = (ARQ_INITIAL, ARQ_BIND_STARTED, ARQ_BOUND, ARQ_UNBOUND,
              ARQ_BIND_FAILED, ARQ_UNBIND_FAILED, ARQ_DELETING)

# Target state -> states it may be entered from (compare-and-swap updates
# use this as their WHERE state IN (...) clause).
ARQ_TRANSITIONS = {
    ARQ_BIND_STARTED: {ARQ_INITIAL, ARQ_UNBOUND},
    ARQ_BOUND: {ARQ_BIND_STARTED},
    ARQ_UNBOUND: {ARQ_INITIAL, ARQ_BIND_STARTED, ARQ_BOUND,
                  ARQ_BIND_FAILED, ARQ_UNBIND_FAILED},
    ARQ_BIND_FAILED: {ARQ_BIND_STARTED, ARQ_BOUND},
    ARQ_UNBIND_FAILED: {ARQ_BOUND, ARQ_BIND_FAILED, ARQ_BIND_STARTED},
    ARQ_DELETING: set(ARQ_STATES) - {ARQ_UNBIND_FAILED},
}

# --- Named groups of states -------------------------------------------------
# NOTE(states): every decision that depends on more than one state reads
# one of these groups, as Nova's vm_states and its ALLOW_* lists do; a set
# of states written out elsewhere would be a second rule for the same
# decision (cyborg/tests/unit/test_state_groups.py looks for one).

#: Statuses a device takes new binds in. Every other one is reserved in
#: Placement, ends a bind BindFailed and is what explain reports; see
#: ``refuses_binds``, the one rule.
DEVICE_TAKES_BINDS = (DEVICE_READY,)
#: Statuses an operator's disable moves to maintaining: activating has its
#: install step running, and a lost device has nothing to maintain.
DEVICE_CAN_MAINTAIN = (DEVICE_READY, DEVICE_INACTIVE, DEVICE_ERROR,
                       DEVICE_DRAINING)
#: Statuses a device may change its partition mode from: settled and
#: present, neither in a transition (activating, draining) nor broken or
#: gone (error, lost).
DEVICE_CAN_CHANGE_MODE = (DEVICE_READY, DEVICE_MAINTAINING, DEVICE_INACTIVE)
#: Statuses an operator may attach a device's accelerator to its host in
#: through /v1: the host, not the scheduler, gets it, so an inactive or
#: maintained one will do; an instance attach binds, so only
#: DEVICE_TAKES_BINDS will.
DEVICE_ATTACHES_TO_HOST = (DEVICE_READY, DEVICE_INACTIVE, DEVICE_MAINTAINING)

#: "In use" by an instance: ARQs holding a handle of their deployable for
#: it. A drain waits for them, a scrub, a driver's disable, a mode change
#: and another instance's image load refuse while any is left, and /v1
#: shows them as the accelerator's attachments.
ARQ_HOLDS_DEVICE = (ARQ_BIND_STARTED, ARQ_BOUND)
#: ARQs whose host may hold work the agent did for them (a prepared
#: handle, such as an mdev): an Unbound one until its release is done.
#: Releasing the handle of one of these has the agent undo that work.
ARQ_MAY_BE_PREPARED = (ARQ_BIND_STARTED, ARQ_BOUND, ARQ_UNBOUND)
#: ARQs without a binding: anyone who may see them may delete them; a
#: bound one needs Nova's service token.
ARQ_WITHOUT_BINDING = (ARQ_INITIAL, ARQ_UNBOUND)

# NOTE(states): two meanings of "resolved", two names. ARQ_RESOLVED is
# Nova's (the API's ?bind_state=resolved): nothing more will happen to the
# binding that Nova waits for, and an ARQ being deleted is settled too.
# ARQ_BIND_ENDED is the conductor's: the bind finished one way or the
# other, and its owner has still to tell Nova (ownership).
ARQ_RESOLVED = frozenset({ARQ_BOUND, ARQ_BIND_FAILED, ARQ_DELETING})
ARQ_BIND_ENDED = (ARQ_BOUND, ARQ_BIND_FAILED)

# States a conductor moves an ARQ out of by itself once its work is done;
# an ARQ that stays in one (cyborg-status reports it) was left behind.
ARQ_TRANSITIONAL = frozenset({ARQ_BIND_STARTED, ARQ_DELETING})

# --- Attach handle and control path types -----------------------------------
ATTACH_HANDLE_TYPES = ('PCI', 'MDEV', 'TEST_PCI')
#: Handles whose agent does host-side work at bind (creates the mdev) and
#: undoes it at unbind.
PREPARED_HANDLE_TYPES = ('MDEV',)
CONTROLPATH_TYPES = ('PCI',)

# --- Device types ---------------------------------------------------------
DEVICE_TYPES = ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD', 'MDEV', 'PCI',
                'NVME')


# --- The one rule of binds --------------------------------------------------
# NOTE(states): Placement reserves a deployable, a bind to it ends
# BindFailed and explain reports it for the same causes, decided here
# only; the agent, the conductor and the database layer all import this
# module. An attach through /v1 also reserves a deployable in Placement,
# but that is its own bind's, not a refusal (see decisions.provider).
#: Why a deployable takes no new bind, in the order they are checked.
REFUSED_HEALTH = 'health'
REFUSED_DRAINING = 'draining'
REFUSED_STATUS = 'status'
REFUSED_CLEANING = 'cleaning'

#: What ``refuses_binds`` answers: one of the REFUSED_* causes and the
#: reason in words.
BindRefusal = collections.namedtuple('BindRefusal', 'cause reason')


def refuses_binds(status, health=None, cleaning=False):
    """Why a deployable takes no new bind, or None when it takes one.

    :param status: its device's status (None: not known yet).
    :param health: its device's health; a failed one refuses even while
        the status is still ready (an agent's fault, an operator's enable
        of a device the next report holds again).
    :param cleaning: it is being scrubbed for its next tenant.
    :returns: a ``BindRefusal``, or None.
    """
    if health == HEALTH_FAILED:
        return BindRefusal(REFUSED_HEALTH, 'device health failed')
    if status == DEVICE_DRAINING:
        return BindRefusal(REFUSED_DRAINING, 'device is draining')
    if status not in DEVICE_TAKES_BINDS:
        return BindRefusal(REFUSED_STATUS, 'device is %s' % (
            status or 'of unknown status'))
    if cleaning:
        return BindRefusal(REFUSED_CLEANING,
                           'deployable is being scrubbed for its next '
                           'tenant')
    return None
