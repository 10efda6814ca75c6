"""Pagination of the v2 lists from microversion 2.4: limit, marker, sort."""

import urllib.parse

from oslo_config import cfg
from oslo_utils import uuidutils
import pecan

from cyborg import exception
from cyborg.api import microversion
from cyborg.api import validation
from cyborg.api.types import link

CONF = cfg.CONF

PARAMS = ('limit', 'marker', 'sort_key', 'sort_dir')

#: The paging parameters each microversion accepts.
_ACCEPTED = microversion.ByVersion({'2.0': (), '2.4': PARAMS})


def params():
    """The paging parameters this request's microversion accepts."""
    return _ACCEPTED()


def parse(sort_keys):
    """Keyword arguments of an object ``list`` from the query string.

    :param sort_keys: the fields a client may sort this list on.
    :raises InvalidParameterValue: a bad value (400).
    """
    if not params():
        return {}
    query = pecan.request.params
    result = {'limit': CONF.api.max_limit}
    if 'limit' in query:
        value = query['limit']
        limit = validation.positive_int(value, maximum=float('inf'))
        if limit is None:
            raise exception.InvalidParameterValue(
                err='limit must be a positive integer, not %r' % value)
        result['limit'] = min(limit, CONF.api.max_limit)
    if 'marker' in query:
        if not uuidutils.is_uuid_like(query['marker']):
            raise exception.InvalidParameterValue(
                err='marker must be the uuid of the last item of the '
                    'previous page')
        result['marker'] = query['marker']
    if 'sort_key' in query:
        if query['sort_key'] not in sort_keys:
            raise exception.InvalidParameterValue(
                err='sort_key must be one of %s' % ', '.join(sort_keys))
        result['sort_key'] = query['sort_key']
    if 'sort_dir' in query:
        if query['sort_dir'] not in ('asc', 'desc'):
            raise exception.InvalidParameterValue(
                err='sort_dir must be asc or desc')
        result['sort_dir'] = query['sort_dir']
    return result


def next_link(resource, items, paging):
    """The URL of the next page, or None when this page is the last.

    A full page may be followed by an empty one; clients stop at the
    first page without a next link.

    :param items: the page's objects, or their views (dicts).
    """
    limit = paging.get('limit')
    if not limit or len(items) < limit:
        return None
    last = items[-1]
    query = [(k, v) for k, v in pecan.request.params.items()
             if k != 'marker']
    query.append(('marker', last['uuid'] if isinstance(last, dict)
                  else last.uuid))
    return '%s/%s/%s?%s' % (link.public_url(), link.API_VERSION, resource,
                            urllib.parse.urlencode(query))
