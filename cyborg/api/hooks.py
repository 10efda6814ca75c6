"""Pecan hooks: the request context and the negotiated microversion."""

from pecan import hooks

from cyborg import context as cyborg_context
from cyborg import policy
from cyborg.api import microversion

# The identity of a request that sends no identity headers under noauth.
NOAUTH_IDENTITY = {
    'HTTP_X_USER_ID': 'noauth-admin',
    'HTTP_X_PROJECT_ID': 'noauth-project',
    'HTTP_X_ROLES': 'admin,manager,member,reader',
    'HTTP_X_SERVICE_ROLES': 'service',
}
_IDENTITY_HEADERS = ('HTTP_X_USER_ID', 'HTTP_X_PROJECT_ID', 'HTTP_X_ROLES',
                     'HTTP_X_SERVICE_ROLES', 'HTTP_X_USER_NAME',
                     'HTTP_X_PROJECT_NAME')


class ContextHook(hooks.PecanHook):
    """Builds ``pecan.request.context`` from the identity headers.

    keystonemiddleware sets X-User-Id, X-Project-Id, X-Roles,
    X-Service-Roles... after validating the token; with ``auth_strategy =
    noauth`` the headers are taken as the client sent them, and a request
    with none of them is an admin of a default project, so that a plain
    ``curl`` works on the embedded default.
    """

    def __init__(self, noauth=False):
        self.noauth = noauth

    def before(self, state):
        environ = state.request.environ
        if self.noauth and not any(h in environ for h in _IDENTITY_HEADERS):
            environ = dict(environ, **NOAUTH_IDENTITY)
        context = cyborg_context.RequestContext.from_environ(environ)
        _user_token_scope(environ, context)
        # NOTE(context): the legacy rules' is_admin:True checks read this;
        # what makes an administrator is a policy rule an operator can
        # change (context_is_admin), not a role name in the code.
        context.is_admin = policy.check_is_admin(context)
        state.request.context = context


def _user_token_scope(environ, context):
    """Take the system scope from the user's token itself.

    NOTE(context): keystonemiddleware writes OpenStack-System-Scope for the
    service token after the user's, so a system-scoped user token sent with
    a service token would read as unscoped; the token it validated says.
    """
    auth = environ.get('keystone.token_auth')
    user = getattr(auth, 'user', None)
    if user is not None:
        context.system_scope = 'all' if user.system_scoped else None


class MicroversionHook(hooks.PecanHook):
    """Negotiates the microversion of every /v2 request."""

    def on_route(self, state):
        # NOTE(microversion): on_route runs before routing, so a bad header
        # is refused (406) before any handler runs; the headers that echo
        # the version are added by microversion.HeadersMiddleware, which
        # also sees the responses of failed requests.
        request = state.request
        if microversion.is_versioned(request.path_info):
            request.environ[microversion.ENVIRON_KEY] = microversion.parse(
                request.headers)
