"""Links in API responses, and the public URL they start with."""

import pecan
import wsme.types as wtypes

from cyborg import conf as cyborg_conf

CONF = cyborg_conf.CONF

API_VERSION = 'v2'


class Link(wtypes.Base):
    """A hyperlink to a resource."""

    href = wtypes.text
    rel = wtypes.text

    _wsme_attr_order = ('href', 'rel')


def public_url(request=None):
    """The URL clients reach the API on, without a trailing slash.

    ``[api] public_endpoint`` when set, else the request's host URL plus
    the script name (the mount point under uWSGI or a proxy).
    """
    if CONF.api.public_endpoint:
        return CONF.api.public_endpoint.rstrip('/')
    request = request if request is not None else pecan.request
    return (request.host_url + request.script_name).rstrip('/')


def make_link(rel, href):
    return Link(href=href, rel=rel)


def resource_links(resource, uuid, bookmark=True, request=None):
    """``self`` (versioned) and optionally ``bookmark`` links of a resource.
    """
    return [make_link(shown['rel'], shown['href']) for shown in
            links_json(public_url(request), resource, uuid, bookmark)]


def links_json(base, resource, uuid, bookmark=True):
    """The links of ``resource_links`` as JSON-ready dicts, for lists that
    render thousands of items without building WSME objects.

    :param base: ``public_url()`` of the request.
    """
    links = [{'href': '%s/%s/%s/%s' % (base, API_VERSION, resource, uuid),
              'rel': 'self'}]
    if bookmark:
        links.append({'href': '%s/%s/%s' % (base, resource, uuid),
                      'rel': 'bookmark'})
    return links
