"""The REST API microversions: the one list, header parsing and headers."""

import collections
import functools
import inspect

import microversion_parse
from oslo_log import log as logging
import pecan

from cyborg import exception

LOG = logging.getLogger(__name__)

SERVICE_TYPE = 'accelerator'
HEADER = 'OpenStack-API-Version'
MIN_HEADER = 'OpenStack-API-Minimum-Version'
MAX_HEADER = 'OpenStack-API-Maximum-Version'

VersionNote = collections.namedtuple('VersionNote', 'version note')

# NOTE(microversion): the single source of versions. Add a line here (and to
# the REST API version history in doc/source) for every new version; clients
# compare against these numbers, so never change an existing line.
VERSIONS = (
    VersionNote('2.0', 'Initial v2 API with microversion support.'),
    VersionNote('2.1', 'ARQ PATCH may set /project_id (admins only).'),
    VersionNote('2.2', 'GET /v2/device_profiles/{name} accepts a name.'),
    VersionNote('2.3', 'Device status field; POST /v2/devices/{uuid}/'
                       'enable and /disable.'),
    VersionNote('2.4', 'POST /v2/devices/{uuid}/activate; GET /v2/agents; '
                       'devices show status_reason and services; lists of '
                       'devices, deployables, attributes, device profiles '
                       'and accelerator requests page (limit, marker, '
                       'sort_key, sort_dir, next).'),
    VersionNote('2.5', 'Driver and service operations: GET and POST '
                       '/v2/drivers, PATCH and DELETE /v2/drivers/{host}/'
                       '{name}, GET /v2/services, POST /v2/services/'
                       'discover.'),
    VersionNote('2.6', 'Device health and maintenance: devices show '
                       'health, health_reason, health_sources, '
                       'health_checked_at, affected_arqs and the status '
                       'draining; deployables show cleaning; POST '
                       '/v2/devices/{uuid}/drain; GET '
                       '/v2/devices/{uuid}/metrics.'),
    VersionNote('2.7', 'GET /v2/limits: the project\'s quota limits and '
                       'usage per resource class.'),
    VersionNote('2.8', 'GET /v2/device_profiles/{uuid_or_name}/candidates: '
                       'why each deployable can or cannot serve each '
                       'group of the profile.'),
    VersionNote('2.9', 'Partition modes: devices show mode and modes; POST '
                       '/v2/devices/{uuid}/mode switches a device to '
                       'another of its modes.'),
    VersionNote('2.10', 'Offer reasons: a device that offers nothing says '
                        'why in status_reason (when its lifecycle gives no '
                        'reason); GET /v2/device_profiles/{uuid_or_name}/'
                        'candidates lists such devices.'),
    VersionNote('2.11', 'GET /v2/conductors: each conductor\'s liveness, '
                        'judged by the database server\'s clock, and how '
                        'far its own clock is from that (clock_skew).'),
    VersionNote('2.12', 'Error bodies carry a machine-readable code '
                        '(cyborg.device.not_found...) next to faultstring.'),
)

_VERSION_STRINGS = tuple(entry.version for entry in VERSIONS)
MIN_VERSION_STRING = _VERSION_STRINGS[0]
MAX_VERSION_STRING = _VERSION_STRINGS[-1]
MIN_VERSION = microversion_parse.parse_version_string(MIN_VERSION_STRING)
MAX_VERSION = microversion_parse.parse_version_string(MAX_VERSION_STRING)


def parse(headers):
    """The version a request asks for, from its headers.

    :param headers: a mapping of request headers (case-insensitive, as
        webob's ``request.headers``).
    :returns: a ``microversion_parse.Version``.
    :raises: MalformedMicroversion or InvalidMicroversion (both 406).
    """
    raw = headers.get(HEADER)
    if raw is None or not raw.strip():
        return MIN_VERSION
    value = microversion_parse.check_standard_header(
        {HEADER.lower(): raw}, SERVICE_TYPE)
    if value is None:
        value = _bare_value(raw)
        if value is None:
            # NOTE(microversion): the header only names other services.
            return MIN_VERSION
        LOG.warning('Deprecated %(header)s header without a service type '
                    '(%(value)r); send "%(header)s: %(service)s %(value)s".',
                    {'header': HEADER, 'value': value,
                     'service': SERVICE_TYPE})
    return _to_version(value, raw)


def requested(headers):
    """The version a request asks for, whether the API serves it or not;
    None when its header cannot be read."""
    try:
        return parse(headers)
    except exception.InvalidMicroversion as exc:
        return microversion_parse.parse_version_string(exc.kwargs['version'])
    except exception.MalformedMicroversion:
        return None


def _bare_value(raw):
    """The last comma-separated element that is a version alone."""
    bare = [item.strip() for item in raw.split(',')
            if len(item.split()) == 1]
    return bare[-1] if bare else None


def _to_version(value, raw):
    if value.lower() == 'latest':
        return MAX_VERSION
    try:
        version = microversion_parse.parse_version_string(value)
    except TypeError:
        raise exception.MalformedMicroversion(
            value=raw, reason='expected "%s <major>.<minor>"' % SERVICE_TYPE
        ) from None
    if str(version) not in _VERSION_STRINGS:
        raise exception.InvalidMicroversion(
            version=value, min_version=MIN_VERSION_STRING,
            max_version=MAX_VERSION_STRING)
    return version


def response_headers(version=None):
    """Headers every /v2 response carries; the version one when known."""
    headers = {MIN_HEADER: MIN_VERSION_STRING,
               MAX_HEADER: MAX_VERSION_STRING}
    if version is not None:
        headers[HEADER] = '%s %s' % (SERVICE_TYPE, version)
    return headers


#: Where the negotiated version of a request is kept in its WSGI environ.
ENVIRON_KEY = 'cyborg.api_version'

V1_PREFIX = 'v1'


def is_versioned(path):
    """Everything but the version document at the root and the original
    /v1 API (which has no microversions) is under /v2."""
    path = path.strip('/')
    return path != '' and path.split('/')[0] != V1_PREFIX


class HeadersMiddleware:
    """Puts the version headers on every /v2 response, errors included."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if not is_versioned(environ.get('PATH_INFO', '')):
            return self.application(environ, start_response)

        def with_headers(status, headers, exc_info=None):
            added = response_headers(environ.get(ENVIRON_KEY))
            vary = []
            kept = []
            for name, value in headers:
                if name.lower() == 'vary':
                    vary += [item.strip() for item in value.split(',')
                             if item.strip()]
                elif name.lower() not in {key.lower() for key in added}:
                    kept.append((name, value))
            if HEADER not in vary:
                vary.append(HEADER)
            kept += list(added.items()) + [('Vary', ', '.join(vary))]
            return start_response(status, kept, exc_info)

        return self.application(environ, with_headers)


def current(request=None):
    """The version negotiated for the request being served."""
    request = request if request is not None else pecan.request
    return request.environ.get(ENVIRON_KEY) or MIN_VERSION


def _version(text):
    return microversion_parse.parse_version_string(text)


class ByVersion:
    """A value that changes with the microversion: the entry of the latest
    version at or below the request's.

    ``ByVersion({'2.0': a, '2.4': b})()`` is ``a`` at 2.0 to 2.3 and ``b``
    from 2.4 on. Views, body schemas and query parameters are declared this
    way, next to each other, instead of being decided inside handlers.
    """

    def __init__(self, table):
        self._entries = sorted(
            ((_version(key), value) for key, value in table.items()),
            key=lambda entry: entry[0])
        if self._entries[0][0] != MIN_VERSION:
            raise ValueError('a ByVersion table starts at %s'
                             % MIN_VERSION_STRING)

    def __call__(self, version=None):
        version = current() if version is None else version
        found = self._entries[0][1]
        for since, value in self._entries:
            if since <= version:
                found = value
        return found


# NOTE(microversion): variants of one handler, by its module and qualified
# name; versioned() appends to it while classes are defined.
_VARIANTS = collections.defaultdict(list)


def variants():
    """{(module, qualname): [(min, max, function)]} of every versioned
    handler, for the test that no two ranges of one handler overlap."""
    return {key: list(found) for key, found in _VARIANTS.items()}


def versioned(min_version, max_version=None):
    """Serve the decorated handler from ``min_version`` to ``max_version``.

    Define a handler once per range of versions, each with this decorator
    (as Placement's version_handler): the last definition dispatches to the
    variant of the request's version. A request outside every range gets a
    404 that says from which microversion the route exists.
    """
    low = _version(min_version)
    high = _version(max_version) if max_version else MAX_VERSION

    def decorate(func):
        found = _VARIANTS[(func.__module__, func.__qualname__)]
        found.append((low, high, func))

        @functools.wraps(func)
        def dispatch(*args, **kwargs):
            version = current()
            for first, last, variant in found:
                if first <= version <= last:
                    return variant(*args, **kwargs)
            raise _not_in_version(found)

        # NOTE(microversion): WSME reads arguments with getfullargspec,
        # which follows __signature__ but not __wrapped__.
        dispatch.__signature__ = inspect.signature(func)
        dispatch.variants = found
        return dispatch

    return decorate


def check_served(handler):
    """Raise the 404 of a versioned handler no variant of which serves the
    request's version; before its arguments are even read."""
    found = getattr(handler, 'variants', None)
    if not found:
        return
    version = current()
    if not any(low <= version <= high for low, high, _f in found):
        raise _not_in_version(found)


def _not_in_version(found):
    request = pecan.request
    route = '%s %s' % (request.method, request.path)
    first = min(low for low, _high, _f in found)
    last = max(high for _low, high, _f in found)
    if last == MAX_VERSION:
        return exception.NotInMicroversion(route=route, since=first,
                                           header=HEADER,
                                           service=SERVICE_TYPE)
    return exception.NotInMicroversionRange(route=route, since=first,
                                            until=last)
