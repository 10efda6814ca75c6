"""Pecan hooks: request context, microversion, errors in the envelope."""

from pecan import hooks

from cyborg import context as cyborg_context
from cyborg.api import errors
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
        # NOTE(context): is_admin is what object queries use to decide
        # whether to filter by project; it follows the admin role.
        context.is_admin = 'admin' in [role.lower()
                                       for role in context.roles]
        state.request.context = context


V1_PREFIX = 'v1'


def is_versioned(request):
    """Everything but the version document at the root and the original
    /v1 API (which has no microversions) is under /v2."""
    path = request.path_info.strip('/')
    return path != '' and path.split('/')[0] != V1_PREFIX


class MicroversionHook(hooks.PecanHook):
    """Negotiates the microversion and echoes it on every /v2 response."""

    def on_route(self, state):
        # NOTE(microversion): on_route runs before routing, so even an
        # unknown /v2 route answers with the version headers, and a bad
        # header is refused (406) before any handler runs.
        request = state.request
        request.version = None
        if is_versioned(request):
            request.version = microversion.parse(request.headers)

    def after(self, state):
        if not is_versioned(state.request):
            return
        response = state.response
        version = getattr(state.request, 'version', None)
        for name, value in microversion.response_headers(version).items():
            response.headers[name] = value
        vary = [item.strip() for item in
                (response.headers.get('Vary') or '').split(',')
                if item.strip()]
        if microversion.HEADER not in vary:
            vary.append(microversion.HEADER)
        response.headers['Vary'] = ', '.join(vary)


class ErrorHook(hooks.PecanHook):
    """Answers any exception that reaches pecan with the error envelope.

    Handlers' own exceptions are turned into faults by ``api.expose``; this
    catches the rest: routing (404, 405), hooks (406 for a bad version) and
    bugs (500, logged with the traceback, never shown).
    """

    def on_error(self, state, exc):
        response = errors.error_response(exc)
        allow = getattr(exc, 'allow', None)
        if allow:
            response.allow = allow
        return response
