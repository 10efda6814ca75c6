"""The version documents at ``/`` and ``/v2``."""

import wsme.types as wtypes

from cyborg.api.types import link


class Version(wtypes.Base):
    """One version of the API and the range of its microversions."""

    id = wtypes.text
    status = wtypes.text
    min_version = wtypes.text
    max_version = wtypes.text
    links = [link.Link]

    _wsme_attr_order = ('id', 'status', 'min_version', 'max_version',
                        'links')


class Versions(wtypes.Base):
    """``GET /``: the versions of the API."""

    name = wtypes.text
    description = wtypes.text
    versions = [Version]
    default_version = Version

    _wsme_attr_order = ('name', 'description', 'versions',
                        'default_version')
