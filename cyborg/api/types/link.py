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
    base = public_url(request)
    links = [make_link('self', '%s/%s/%s/%s' % (base, API_VERSION, resource,
                                                uuid))]
    if bookmark:
        links.append(make_link('bookmark', '%s/%s/%s' % (base, resource,
                                                         uuid)))
    return links
