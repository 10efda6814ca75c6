"""Quotas: units of each resource class a project may hold, checked twice."""

# NOTE(quota): a resource is named "class:<resource class>" (class:FPGA,
# class:VGPU, class:CUSTOM_QAT), as Nova names its unified limits per
# resource class. The limits come from [quota] limits (flat driver) or
# from Keystone's unified limits through oslo.limit; usage is always
# counted here, from the project's accelerator requests. The check runs
# before the requests are written and, with [quota] recheck_quota, once
# more after, as oslo.limit's documentation asks: two creates at the
# same time both pass the first check, and the second check undoes the
# one that went over, so a project never ends up above its limit.

from keystoneauth1 import exceptions as ksa_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_config import cfg
from oslo_limit import exception as limit_exception
from oslo_limit import limit as oslo_limit
from oslo_log import log as logging

from cyborg import exception
from cyborg.conf import quota as quota_conf
from cyborg.db import quota_usage

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

PREFIX = 'class:'
#: Keystone's "no limit".
UNLIMITED = -1


def resource(resource_class):
    return PREFIX + resource_class


def resource_class(name):
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def _usage(context, project_id):
    return {resource(rc): units for rc, units in quota_usage.usage(
        context, project_id, CONF.conductor.orphan_arq_age).items()}


class _Flat:
    """The limits of ``[quota] limits``, the same for every project."""

    def __init__(self, usage_callback):
        self._usage = usage_callback

    @staticmethod
    def _limit(name):
        configured = CONF.quota.limits.get(resource_class(name))
        if configured is None or not str(configured).strip():
            return UNLIMITED
        try:
            return int(configured)
        except ValueError:
            LOG.warning('[quota] limits has %r for %s, not a number: it '
                        'is unlimited', configured, resource_class(name))
            return UNLIMITED

    def get_project_limits(self, project_id, names):
        if names is None:
            names = [resource(rc) for rc in sorted(CONF.quota.limits)]
        return [(name, self._limit(name)) for name in names]

    def enforce(self, project_id, deltas):
        names = sorted(deltas)
        held = self._usage(project_id, names)
        over = []
        for name, limit in self.get_project_limits(project_id, names):
            if limit >= 0 and held.get(name, 0) + deltas[name] > limit:
                over.append(limit_exception.OverLimitInfo(
                    name, limit, held.get(name, 0), deltas[name]))
        if over:
            raise limit_exception.ProjectOverLimit(project_id, over)


def _enforcer(usage_callback):
    if CONF.quota.driver == quota_conf.UNIFIED_LIMITS:
        # NOTE(quota): a new Enforcer per request caches Keystone's
        # limits for that request only, so a changed limit counts at once.
        return oslo_limit.Enforcer(usage_callback)
    return _Flat(usage_callback)


_KEYSTONE_ERRORS = (limit_exception.SessionInitError,
                    ksa_exceptions.ClientException,
                    sdk_exceptions.SDKException, ValueError)


def _run(what, *args):
    try:
        return what(*args)
    except limit_exception.ProjectOverLimit as exc:
        raise exception.QuotaExceeded(
            project_id=exc.project_id,
            over=[{'resource': info.resource_name, 'limit': info.limit,
                   'usage': info.current_usage, 'requested': info.delta}
                  for info in exc.over_limit_info_list]) from None
    except _KEYSTONE_ERRORS as exc:
        LOG.error('Keystone\'s unified limits could not be read: %s', exc)
        raise exception.QuotaUnavailable(
            reason=exception.message_of(exc)) from exc


def check(context, project_id, demand):
    """Refuse ``demand`` ({resource class: units}) when the project would
    go over a limit; a demand of zero units checks what it holds now.

    :raises QuotaExceeded: (403) naming each limit, usage and request.
    :raises QuotaUnavailable: (503) Keystone's limits cannot be read.
    """
    if project_id is None or not demand:
        return
    deltas = {resource(rc): int(units) for rc, units in demand.items()}

    def counted(project, names):
        held = _usage(context, project)
        return {name: held.get(name, 0) for name in names}

    enforcer = _run(_enforcer, counted)
    _run(enforcer.enforce, project_id, deltas)


def recheck(context, project_id, demand, undo):
    """After the write: when the project is now over a limit, ``undo()``
    and refuse, as ``check`` does."""
    if not CONF.quota.recheck_quota:
        return
    try:
        check(context, project_id, {rc: 0 for rc in demand})
    except exception.QuotaExceeded:
        LOG.info('Project %s went over a limit with a concurrent request; '
                 'this one is undone', project_id)
        undo()
        raise


def limits(context, project_id):
    """The project's limits and usage: a list of ``{resource,
    resource_class, limit, usage}`` for every class with a limit or in
    use, by resource name; a limit of -1 is unlimited."""
    held = _usage(context, project_id)

    def counted(project, names):
        return {name: held.get(name, 0) for name in names}

    enforcer = _run(_enforcer, counted)
    listed = dict(_run(enforcer.get_project_limits, project_id, None))
    if CONF.quota.driver == quota_conf.UNIFIED_LIMITS:
        # NOTE(quota): a project's own limits are only its overrides; the
        # registered limits cover the rest.
        for name, limit in _run(enforcer.get_registered_limits, None):
            listed.setdefault(name, limit)
    names = sorted(set(listed) | set(held))
    missing = [name for name in names if name not in listed]
    if missing:
        listed.update(_run(enforcer.get_project_limits, project_id, missing))
    return [{'resource': name, 'resource_class': resource_class(name),
             'limit': int(listed[name]), 'usage': held.get(name, 0)}
            for name in names]
