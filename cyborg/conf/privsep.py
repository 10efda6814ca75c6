"""Options of the [cyborg_sys_admin] group: the agent's privsep daemon."""

import copy

from oslo_config import cfg
from oslo_privsep import capabilities as caps
from oslo_privsep import priv_context

# NOTE(conf): oslo.privsep owns these options and registers them when
# cyborg.privsep builds its context; they are listed here too so that the
# sample config, the reference and config checks know the group.
GROUP = cfg.OptGroup(
    'cyborg_sys_admin', title='Agent privileges',
    help='How cyborg-agent starts its privileged helper (oslo.privsep), '
         'which writes sysfs and runs vendor programming tools as root.')


def register_opts(conf):
    conf.register_opts(priv_context.OPTS, group=GROUP)


def list_opts():
    # NOTE(conf): cyborg.privsep sets the capabilities its context keeps as
    # the default when it builds the context; the sample shows them too.
    from cyborg import privsep
    opts = copy.deepcopy(priv_context.OPTS)
    for opt in opts:
        if opt.dest == 'capabilities':
            opt.default = list(privsep.CAPABILITIES)
            opt.sample_default = ','.join(
                caps.CAPS_BYVALUE[value] for value in privsep.CAPABILITIES)
    return {GROUP: opts}
