"""The root of the API: the versions document, and routing into /v2."""

import pecan
from pecan import rest

from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api.controllers import v1
from cyborg.api.controllers import v2
from cyborg.api.types import link
from cyborg.api.types import version as version_types

DESCRIPTION = ('Cyborg is the OpenStack project for lifecycle management of '
               'hardware accelerators, such as GPUs, FPGAs, AI chips, '
               'security accelerators (e.g. crypto cards), high-speed '
               'network adapters and storage accelerators.')


def version_document(href):
    """The v2 entry of the versions document."""
    return version_types.Version(
        id=v2.VERSION_ID, status='CURRENT',
        min_version=microversion.MIN_VERSION_STRING,
        max_version=microversion.MAX_VERSION_STRING,
        links=[link.make_link('self', href)])


class RootController(rest.RestController):
    """``GET /`` lists the API versions; anything else goes to /v2."""

    v1 = v1.V1Controller()
    v2 = v2.V2Controller()

    @expose.expose(version_types.Versions)
    def get(self):
        version = version_document('%s/%s' % (link.public_url(),
                                              v2.VERSION_ID))
        return version_types.Versions(
            name='OpenStack Cyborg API', description=DESCRIPTION,
            versions=[version], default_version=version)

    @pecan.expose()
    def _route(self, args, request=None):
        # NOTE(routing): clients written against upstream call the API both
        # with and without the version segment (/devices == /v2/devices).
        if args and args[0] and args[0] not in (v1.VERSION_ID,
                                                v2.VERSION_ID):
            args = [v2.VERSION_ID] + list(args)
        return super()._route(args, request)
