"""State names and the one transition table per state machine."""

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

# States in which Nova considers the binding settled.
ARQ_RESOLVED = frozenset({ARQ_BOUND, ARQ_BIND_FAILED, ARQ_DELETING})

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
