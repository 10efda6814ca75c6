"""The HTTP calls behind the ``accelerator_ops`` commands."""

import re
from typing import Any
from urllib import parse

from osc_lib import exceptions

from cyborg_cli import errors

SERVICE_TYPE = 'accelerator'
VERSION_HEADER = 'OpenStack-API-Version'
# NOTE(client): the drivers and services routes appeared in this v2
# microversion; the v1 accelerators routes take no microversion at all.
OPS_MICROVERSION = '2.5'
# NOTE(client): GET /v2/limits appeared in this one.
LIMITS_MICROVERSION = '2.7'
# NOTE(client): GET /v2/device_profiles/{uuid_or_name}/candidates appeared
# in this one.
EXPLAIN_MICROVERSION = '2.8'
# NOTE(client): a device's mode and modes, and POST /v2/devices/{uuid}/mode,
# appeared in this one.
MODE_MICROVERSION = '2.9'
# NOTE(client): the candidates list the devices that offer nothing from
# this one.
OFFERS_MICROVERSION = '2.10'
# NOTE(client): GET /v2/conductors appeared in this one.
CONDUCTORS_MICROVERSION = '2.11'
#: What a server answers a microversion newer than its own with.
_NOT_ACCEPTABLE = 406

# NOTE(client): catalogs and --os-endpoint usually name a versioned
# endpoint (.../v2) while these commands speak to both /v1 and /v2, so the
# client keeps only the root the versions hang from.
_VERSION_SUFFIX = re.compile(r'/v\d+(\.\d+)?$')


def api_root(endpoint: str) -> str:
    """The unversioned root of the API, from a maybe versioned endpoint."""
    return _VERSION_SUFFIX.sub('', endpoint.rstrip('/'))


def _quote(segment: str) -> str:
    return parse.quote(segment, safe='')


def _query(**params: str | None) -> str:
    given = {key: value for key, value in params.items() if value}
    return '?' + parse.urlencode(given) if given else ''


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        raise exceptions.CommandError(
            'The accelerator API answered HTTP %d with a body that is not '
            'JSON.' % response.status_code) from None


def _items(response: Any, key: str) -> list[dict[str, Any]]:
    body = _json(response)
    items = body.get(key) if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise exceptions.CommandError(
            'The accelerator API answered without a "%s" list.' % key)
    return items


class Client:
    """The accelerator API as this project's commands use it."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self._root: str | None = None

    @property
    def root(self) -> str:
        """The unversioned API root, looked up once."""
        if self._root is None:
            endpoint = self.adapter.get_endpoint()
            if not endpoint:
                raise exceptions.EndpointNotFound(
                    'No endpoint of service type %r found; give one with '
                    '--os-endpoint or OS_ACCELERATOR_ENDPOINT_OVERRIDE.'
                    % SERVICE_TYPE)
            self._root = api_root(endpoint)
        return self._root

    def request(self, method: str, path: str, *, body: Any = None,
                microversion: str | None = None,
                headers: dict[str, str] | None = None) -> Any:
        """One call; a 4xx or 5xx answer raises ``errors.ApiError``.

        :param path: a path under the API root, or an absolute URL (a
            Location the API gave).
        """
        url = path if parse.urlsplit(path).netloc else self.root + path
        sent = {'Accept': 'application/json'}
        if microversion:
            sent[VERSION_HEADER] = '%s %s' % (SERVICE_TYPE, microversion)
        sent.update(headers or {})
        kwargs = {} if body is None else {'json': body}
        response = self.adapter.request(url, method, headers=sent,
                                        raise_exc=False, **kwargs)
        if response.status_code >= 400:
            raise errors.from_response(response)
        return response

    # --- drivers (v2, OPS_MICROVERSION) ---------------------------------

    def list_drivers(self, host: str | None = None) -> list[dict[str, Any]]:
        response = self.request('GET', '/v2/drivers' + _query(host=host),
                                microversion=OPS_MICROVERSION)
        return _items(response, 'drivers')

    def install_driver(self, host: str, name: str) -> dict[str, Any]:
        response = self.request('POST', '/v2/drivers',
                                body={'host': host, 'name': name},
                                microversion=OPS_MICROVERSION)
        return _json(response)

    def uninstall_driver(self, host: str, name: str) -> None:
        self.request('DELETE', self._driver_path(host, name),
                     microversion=OPS_MICROVERSION)

    def update_driver(self, host: str, name: str,
                      image_uuid: str | None = None) -> dict[str, Any]:
        body = {} if image_uuid is None else {'image_uuid': image_uuid}
        response = self.request('PATCH', self._driver_path(host, name),
                                body=body, microversion=OPS_MICROVERSION)
        return _json(response)

    @staticmethod
    def _driver_path(host: str, name: str) -> str:
        return '/v2/drivers/%s/%s' % (_quote(host), _quote(name))

    # --- services (v2, OPS_MICROVERSION) --------------------------------

    def list_services(self, host: str | None = None,
                      driver: str | None = None) -> list[dict[str, Any]]:
        path = '/v2/services' + _query(host=host, driver=driver)
        response = self.request('GET', path, microversion=OPS_MICROVERSION)
        return _items(response, 'services')

    def discover_services(self,
                          host: str | None = None) -> list[dict[str, Any]]:
        body = {} if host is None else {'host': host}
        response = self.request('POST', '/v2/services/discover', body=body,
                                microversion=OPS_MICROVERSION)
        return _items(response, 'hosts')

    # --- quota limits (v2, LIMITS_MICROVERSION) --------------------------

    def list_limits(self,
                    project_id: str | None = None) -> list[dict[str, Any]]:
        """The limit and usage of each resource class of a project (the
        caller's without ``project_id``)."""
        path = '/v2/limits' + _query(project_id=project_id)
        response = self.request('GET', path,
                                microversion=LIMITS_MICROVERSION)
        return _items(response, 'limits')

    # --- device profile explanations (v2, EXPLAIN_MICROVERSION) ---------

    def explain_profile(self, uuid_or_name: str,
                        member_of: str | None = None) -> list[dict[str, Any]]:
        """The groups of a device profile, each with every deployable
        judged: whether it can serve the group, and why not; and, from a
        server of 2.10 on, every device that offers nothing and why."""
        path = '/v2/device_profiles/%s/candidates%s' % (
            _quote(uuid_or_name), _query(member_of=member_of))
        try:
            response = self.request('GET', path,
                                    microversion=OFFERS_MICROVERSION)
        except errors.ApiError as exc:
            # NOTE(client): a server older than 2.10 refuses the version
            # itself; it still explains at 2.8.
            if exc.status != _NOT_ACCEPTABLE:
                raise
            response = self.request('GET', path,
                                    microversion=EXPLAIN_MICROVERSION)
        return _items(response, 'groups')

    # --- device partition modes (v2, MODE_MICROVERSION) -----------------

    def get_device(self, uuid: str) -> dict[str, Any]:
        """A device as 2.9 shows it, with its ``mode`` and ``modes``."""
        response = self.request('GET', self._device_path(uuid),
                                microversion=MODE_MICROVERSION)
        return _json(response)

    def set_device_mode(self, uuid: str, mode: str) -> dict[str, Any]:
        """Switch a device to one of its modes; the device afterwards."""
        response = self.request('POST', self._device_path(uuid) + '/mode',
                                body={'mode': mode},
                                microversion=MODE_MICROVERSION)
        return _json(response)

    @staticmethod
    def _device_path(uuid: str) -> str:
        return '/v2/devices/%s' % _quote(uuid)

    # --- conductors (v2, CONDUCTORS_MICROVERSION) -----------------------

    def list_conductors(self) -> list[dict[str, Any]]:
        """Each conductor's liveness, versions and clock skew."""
        try:
            response = self.request('GET', '/v2/conductors',
                                    microversion=CONDUCTORS_MICROVERSION)
        except errors.ApiError as exc:
            # NOTE(client): a server older than 2.11 refuses the version
            # itself, in words that do not say which command needed it.
            if exc.status != _NOT_ACCEPTABLE:
                raise
            raise errors.needs_microversion(
                exc, 'GET /v2/conductors', CONDUCTORS_MICROVERSION) from None
        return _items(response, 'conductors')

    # --- accelerators (v1) ----------------------------------------------

    def list_units(self) -> list[dict[str, Any]]:
        # NOTE(client): "accelerator", singular, as the v1 proposal has it.
        return _items(self.request('GET', '/v1/accelerators'), 'accelerator')

    def get_unit(self, uuid: str) -> tuple[dict[str, Any], str | None]:
        """The accelerator and its ETag (None when the API sent none)."""
        response = self.request('GET', self._unit_path(uuid))
        return _json(response), response.headers.get('ETag')

    def create_unit(self, name: str,
                    uuid: str | None = None) -> dict[str, Any]:
        """Create an accelerator, then read it where the API put it."""
        body = {'name': name}
        if uuid is not None:
            body['uuid'] = uuid
        response = self.request('POST', '/v1/accelerators', body=body)
        location = response.headers.get('Location')
        if not location:
            raise exceptions.CommandError(
                'The accelerator API created %r but did not say where '
                '(no Location header).' % name)
        # NOTE(client): a relative Location is relative to the URL that was
        # requested (RFC 9110), not to the API root.
        return _json(self.request('GET', parse.urljoin(response.url,
                                                        location)))

    def set_unit_specs(self, uuid: str, acc_specs: dict[str, Any],
                       etag: str) -> dict[str, Any]:
        response = self.request('PUT', self._unit_path(uuid) + '/acc_specs',
                                body={'acc_specs': acc_specs},
                                headers={'If-Match': etag})
        return _json(response)

    def attach_unit(self, uuid: str, target: dict[str, str]) -> dict[str, Any]:
        """Attach to ``{"instance_uuid": ...}`` or ``{"host": ...}``."""
        return _json(self.request('PUT', self._unit_path(uuid), body=target))

    def detach_unit(self, uuid: str) -> None:
        self.request('DELETE', self._unit_path(uuid))

    @staticmethod
    def _unit_path(uuid: str) -> str:
        return '/v1/accelerators/%s' % _quote(uuid)
