"""``GET /v2/limits`` (2.7): the caller's quota limits and usage."""

import pecan
from pecan import rest
import wsme.types as wtypes

from cyborg import exception
from cyborg import policy
from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api.types import base as types_base
from cyborg.api.types import limit as limit_types
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.policies import limit as limit_policies


class LimitsController(rest.RestController):
    """Per resource class (``class:FPGA``...): the limit and the usage."""

    @expose.expose(limit_types.Limits, wtypes.text)
    @microversion.versioned('2.7')
    def get_all(self, project_id=None):
        """The caller's project; ``?project_id=`` another (admins)."""
        types_base.check_query(pecan.request.params, ('project_id',))
        context = pecan.request.context
        policy.authorize(limit_policies.GET, None, context)
        if project_id is not None and project_id != context.project_id:
            policy.authorize(limit_policies.OTHER_PROJECT, None, context)
        project = project_id or context.project_id
        if not project:
            raise exception.Invalid(
                reason='the request names no project: use a project-scoped '
                       'token or ?project_id=')
        entries = conductor_rpcapi.for_api().get_limits(context, project)
        return limit_types.Limits.from_dicts(project, entries)
