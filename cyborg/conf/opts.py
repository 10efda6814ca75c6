"""The explicit list of Cyborg's options, for oslo-config-generator."""

from cyborg.conf import agent
from cyborg.conf import api
from cyborg.conf import conductor
from cyborg.conf import database
from cyborg.conf import default
from cyborg.conf import drivers
from cyborg.conf import embedded
from cyborg.conf import fpga
from cyborg.conf import generic
from cyborg.conf import glance
from cyborg.conf import gpu
from cyborg.conf import health
from cyborg.conf import key_manager
from cyborg.conf import notifications
from cyborg.conf import nova
from cyborg.conf import npu
from cyborg.conf import pci
from cyborg.conf import placement
from cyborg.conf import privsep
from cyborg.conf import qat
from cyborg.conf import quota
from cyborg.conf import upgrade_levels

_MODULES = (default, api, agent, conductor, database, drivers, pci,
            gpu, fpga, qat, npu, generic, health, placement, embedded, nova,
            key_manager,
            glance, privsep, upgrade_levels, notifications, quota)


def list_opts():
    """Return [(group, [opts])] as oslo.config's generator expects."""
    merged = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return [(group, opts) for group, opts in merged.items()]
