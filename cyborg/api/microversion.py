"""The REST API microversions: the one list, header parsing and headers."""

import collections

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


def current(request=None):
    """The version negotiated for the request being served."""
    request = request if request is not None else pecan.request
    return getattr(request, 'version', None) or MIN_VERSION


def at_least(major, minor, request=None):
    """True when the request's version is ``major.minor`` or later."""
    return current(request) >= (major, minor)
