"""Privileged operations of the agent, run in an oslo.privsep daemon."""

from oslo_privsep import capabilities as caps
from oslo_privsep import priv_context

#: What the agent's privileged helper keeps of root's powers.
CAPABILITIES = (caps.CAP_CHOWN, caps.CAP_DAC_OVERRIDE,
                caps.CAP_DAC_READ_SEARCH, caps.CAP_FOWNER,
                caps.CAP_NET_ADMIN, caps.CAP_SYS_ADMIN)

# NOTE(privsep): one context for everything the agent does as root: writing
# sysfs (driver binding, SR-IOV, mdevs) and running vendor tools that program
# FPGAs, which need raw device access.
sys_admin_pctxt = priv_context.PrivContext(
    'cyborg',
    cfg_section='cyborg_sys_admin',
    pypath=__name__ + '.sys_admin_pctxt',
    capabilities=list(CAPABILITIES),
)
