"""The one Placement client: a keystoneauth1 adapter from [placement]."""

import threading
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.clients import adapter as ksa_adapter

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: One microversion for every call: in_tree (1.14), provider creation that
#: returns the provider (1.20) and reserved equal to total (1.26).
MICROVERSION = '1.26'

#: Allocation candidates as Nova's scheduler asks for them: nested
#: providers (1.29), forbidden traits (1.22) and member_of in: (1.24).
CANDIDATES_MICROVERSION = '1.36'

#: POST /reshaper: inventories of several providers (and the allocations
#: on them) replaced in one transaction (1.30).
RESHAPER_MICROVERSION = '1.30'
_UNKNOWN_NAMES = ('No such trait', 'No such resource class')

_INVENTORY_IN_USE = 'placement.inventory.inuse'
_CONCURRENT_UPDATE = 'placement.concurrent_update'
_PROVIDER_IN_USE = 'placement.resource_provider.inuse'
_CANNOT_DELETE_PARENT = 'placement.resource_provider.cannot_delete_parent'
_CUSTOM = 'CUSTOM_'


def configured():
    """Whether [placement] names an auth plugin to reach Placement with."""
    return bool(CONF.placement.auth_type)


def _error(response):
    """``(code, detail)`` of a Placement error body."""
    try:
        error = response.json()['errors'][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, response.text[:200]
    return error.get('code'), error.get('detail', '')


class PlacementClient:
    """Calls Placement; raises ``cyborg.exception`` errors, never HTTP ones.

    ``PlacementUnavailable`` stands for every failure worth retrying (no
    connection, a timeout, a 5xx); other refusals raise ``PlacementError``
    or one of the specific conflicts.
    """

    def __init__(self, adapter=None):
        self._adapter = adapter
        self._known_classes = set()
        self._known_traits = set()
        self._lock = threading.Lock()
        #: Requests sent, for benchmarks and logs.
        self.calls = 0

    @property
    def adapter(self):
        if self._adapter is None:
            self._adapter = ksa_adapter.from_conf('placement')
        return self._adapter

    def _request(self, method, url, body=None, ok=(200,),
                 microversion=MICROVERSION):
        with self._lock:
            self.calls += 1
        kwargs = {'microversion': microversion, 'raise_exc': False,
                  'headers': {'Accept': 'application/json'}}
        if body is not None:
            kwargs['json'] = body
        try:
            response = self.adapter.request(url, method, **kwargs)
        except (ks_exc.ConnectionError, ks_exc.EndpointNotFound,
                ks_exc.EmptyCatalog, ks_exc.MissingAuthPlugin) as exc:
            raise exception.PlacementUnavailable(
                reason='%s %s: %s' % (method, url, exc)) from exc
        except ks_exc.Unauthorized as exc:
            raise exception.PlacementUnavailable(
                reason='authentication failed: %s' % exc) from exc
        if response.status_code >= 500:
            raise exception.PlacementUnavailable(
                reason='%s %s: HTTP %d' % (method, url,
                                           response.status_code))
        if response.status_code in ok:
            return response
        code, detail = _error(response)
        if response.status_code == 401 or response.status_code == 403:
            raise exception.PlacementUnavailable(
                reason='%s %s: HTTP %d %s' % (method, url,
                                              response.status_code, detail))
        if code == _CONCURRENT_UPDATE:
            raise exception.PlacementGenerationConflict(
                uuid=url.split('/')[2] if url.count('/') > 2 else url)
        if code == _INVENTORY_IN_USE:
            # NOTE(placement): /reshaper names no provider in its URL; the
            # detail says which.
            raise exception.PlacementInventoryInUse(
                uuid=url.split('/')[2] if url.count('/') > 1 else url,
                detail=detail)
        raise exception.PlacementError(method=method, url=url,
                                       status=response.status_code,
                                       detail=detail, code=code)

    # --- Providers ---------------------------------------------------------

    def provider_by_name(self, name):
        """The provider called ``name``, or None."""
        found = self._request(
            'GET', '/resource_providers?name=%s' % urllib.parse.quote(
                name, safe='')).json()['resource_providers']
        return found[0] if found else None

    def get_provider(self, uuid):
        """The provider ``uuid``, or None."""
        response = self._request('GET', '/resource_providers/%s' % uuid,
                                 ok=(200, 404))
        return response.json() if response.status_code == 200 else None

    def providers_in_tree(self, root_uuid):
        """Every provider of the tree that ``root_uuid`` belongs to."""
        return self._request(
            'GET', '/resource_providers?in_tree=%s' % root_uuid
        ).json()['resource_providers']

    def create_provider(self, uuid, name, parent_uuid):
        """Create a provider; returns it (generation 0).

        :raises PlacementError: with ``code`` 'placement.duplicate_name'
            when the uuid or the name exists already.
        """
        return self._request(
            'POST', '/resource_providers',
            {'uuid': uuid, 'name': name,
             'parent_provider_uuid': parent_uuid}).json()

    def delete_provider(self, uuid):
        """Delete a provider; returns False when Placement keeps it because
        of allocations or children (409), True when it is gone."""
        try:
            self._request('DELETE', '/resource_providers/%s' % uuid,
                          ok=(204, 404))
        except exception.PlacementError as exc:
            if exc.kwargs.get('code') in (_PROVIDER_IN_USE,
                                          _CANNOT_DELETE_PARENT) or \
                    exc.kwargs.get('status') == 409:
                LOG.info('Placement keeps resource provider %s: %s', uuid,
                         exc.kwargs.get('detail'))
                return False
            raise
        return True

    # --- Inventories, traits, usages ----------------------------------------

    def get_inventories(self, uuid):
        """``(generation, {resource class: inventory})``."""
        body = self._request(
            'GET', '/resource_providers/%s/inventories' % uuid).json()
        return body['resource_provider_generation'], body['inventories']

    def set_inventories(self, uuid, generation, inventories):
        """Replace the inventories; returns the new generation."""
        return self._request(
            'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': generation,
             'inventories': inventories}).json()[
                 'resource_provider_generation']

    def get_traits(self, uuid):
        """``(generation, set of trait names)``."""
        body = self._request(
            'GET', '/resource_providers/%s/traits' % uuid).json()
        return body['resource_provider_generation'], set(body['traits'])

    def set_traits(self, uuid, generation, traits):
        """Replace the traits; returns the new generation."""
        return self._request(
            'PUT', '/resource_providers/%s/traits' % uuid,
            {'resource_provider_generation': generation,
             'traits': sorted(traits)}).json()[
                 'resource_provider_generation']

    def get_usages(self, uuid):
        """``{resource class: amount allocated}`` of a provider."""
        return self._request(
            'GET', '/resource_providers/%s/usages' % uuid).json()['usages']

    def get_allocations(self, uuid):
        """Consumer uuids holding allocations on a provider (none when
        the provider does not exist)."""
        response = self._request(
            'GET', '/resource_providers/%s/allocations' % uuid,
            ok=(200, 404))
        if response.status_code == 404:
            return []
        return sorted(response.json()['allocations'])

    def reshape(self, inventories, allocations):
        """Replace the inventories of several providers, and the
        allocations of the consumers on them, in one transaction.

        :param inventories: provider uuid -> ``{'resource_provider_generation':
            ..., 'inventories': {class: inventory}}``, the whole inventory
            each provider is to have (``{}``: none at all).
        :param allocations: consumer uuid -> the whole of its allocations
            after the reshape, as ``POST /allocations`` takes them; ``{}``
            when no consumer's allocations change.
        :raises PlacementInventoryInUse: an inventory removed or shrunk is
            allocated.
        :raises PlacementGenerationConflict: a provider or consumer
            changed meanwhile.
        :raises PlacementError: any other refusal (400: a provider or class
            unknown, 409: allocations that do not fit).
        """
        self._request('POST', '/reshaper',
                      {'inventories': inventories,
                       'allocations': allocations},
                      ok=(204,), microversion=RESHAPER_MICROVERSION)

    # --- Allocation candidates ---------------------------------------------

    def candidate_providers(self, resources, required=(), member_of=None):
        """The providers Placement would allocate ``resources`` ({class:
        amount}) from, as Nova's scheduler asks for one request group:
        ``required`` traits (a ``!`` forbids one), ``member_of`` an
        aggregate query (``in:a,b`` or one uuid). A set of uuids."""
        query = [('resources', ','.join(
            '%s:%d' % (name, amount)
            for name, amount in sorted(resources.items())))]
        if required:
            query.append(('required', ','.join(required)))
        if member_of:
            query.append(('member_of', member_of))
        try:
            body = self._request(
                'GET', '/allocation_candidates?%s'
                % urllib.parse.urlencode(query),
                microversion=CANDIDATES_MICROVERSION).json()
        except exception.PlacementError as exc:
            # NOTE(placement): a trait or class no provider ever had is
            # unknown to Placement, which refuses the query (400) where
            # Nova's scheduler then finds no host: no candidate either.
            if exc.kwargs.get('status') == 400 and any(
                    text in (exc.kwargs.get('detail') or '')
                    for text in _UNKNOWN_NAMES):
                return set()
            raise
        return {uuid for request in body['allocation_requests']
                for uuid in request['allocations']}

    # --- Custom resource classes and traits ---------------------------------

    def ensure_resource_classes(self, names):
        """Create the custom resource classes Placement does not have."""
        for name in sorted(set(names) - self._known_classes):
            if name.startswith(_CUSTOM):
                # NOTE(placement): PUT is idempotent from 1.7: 201 or 204.
                self._request('PUT', '/resource_classes/%s' % name,
                              ok=(201, 204))
            self._known_classes.add(name)

    def ensure_traits(self, names):
        """Create the custom traits Placement does not have."""
        missing = sorted(name for name in set(names) - self._known_traits
                         if name.startswith(_CUSTOM))
        if missing:
            existing = set(self._request(
                'GET', '/traits?name=in:%s' % ','.join(missing)
            ).json()['traits'])
            for name in missing:
                if name not in existing:
                    self._request('PUT', '/traits/%s' % name, ok=(201, 204))
        self._known_traits.update(names)

    def forget_names(self):
        """Forget which classes and traits exist (after drift was found)."""
        self._known_classes.clear()
        self._known_traits.clear()
