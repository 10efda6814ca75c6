"""Privileged writes into sysfs: driver binding, SR-IOV VFs, mdevs."""

import os

from oslo_concurrency import processutils

from cyborg import exception
from cyborg import privsep


def _check(root, path):
    # NOTE(privsep): the daemon writes only inside the sysfs tree the agent
    # is configured with, whatever path an unprivileged caller passes.
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise exception.Invalid(reason='%s is outside %s' % (path, root))
    return real


@privsep.sys_admin_pctxt.entrypoint
def write(root, path, value):
    """Write ``value`` to the sysfs file ``path`` below ``root``."""
    real = _check(root, path)
    with open(real, 'w') as out:
        out.write(str(value))


@privsep.sys_admin_pctxt.entrypoint
def execute(*cmd, **kwargs):
    """Run a vendor tool as root; returns (stdout, stderr)."""
    return processutils.execute(*cmd, **kwargs)
