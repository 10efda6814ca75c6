"""Cyborg's configuration: one module per option group, registered on CONF."""

from oslo_config import cfg
from oslo_limit import opts as limit_opts

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

CONF = cfg.CONF

# NOTE(conf): order does not matter, but every group registers itself here
# and nowhere else, so importing a module never changes CONF behind our back.
for _module in (default, api, agent, conductor, database, drivers, pci,
                gpu, fpga, qat, npu, generic, health, placement, embedded,
                key_manager,
                nova, glance, privsep, upgrade_levels, notifications, quota):
    _module.register_opts(CONF)
# NOTE(conf): [oslo_limit], read by oslo.limit's Enforcer with the
# unified_limits quota driver.
limit_opts.register_opts(CONF)
