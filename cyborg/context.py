"""The request context that travels with every API call and RPC."""

from oslo_context import context as oslo_context
from oslo_db.sqlalchemy import enginefacade


@enginefacade.transaction_context_provider
class RequestContext(oslo_context.RequestContext):
    """Identity and request id of a caller; carries a DB session in the
    conductor only (the enginefacade attributes stay unused elsewhere)."""

    def __init__(self, is_admin=None, **kwargs):
        super().__init__(is_admin=bool(is_admin), **kwargs)
        #: When (on this process's ``time.monotonic()``) the caller of the
        #: RPC call this context came with stops waiting; None for a
        #: request that did not come by a call with a deadline. NOTE(rpc):
        #: never in to_dict(): each call sends a deadline of its own
        #: (cyborg.deadline), and a cast none.
        self.deadline = None

    def to_policy_values(self):
        values = super().to_policy_values()
        values['is_admin'] = self.is_admin
        return values

    def to_dict(self):
        values = super().to_dict()
        values['is_admin'] = self.is_admin
        return values

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault('is_admin', values.get('is_admin', False))
        return super().from_dict(values, **kwargs)

    def elevated(self):
        ctx = self.__class__.from_dict(self.to_dict())
        ctx.is_admin = True
        ctx.deadline = self.deadline
        if 'admin' not in ctx.roles:
            ctx.roles = list(ctx.roles) + ['admin']
        return ctx


def get_admin_context():
    """A context for the services' own work (reports, heartbeats)."""
    return RequestContext(is_admin=True, roles=['admin', 'service'],
                          overwrite=False)
