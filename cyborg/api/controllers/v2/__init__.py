"""Version 2 of the API: its document and its resources."""

from pecan import rest

from cyborg.api import expose
from cyborg.api import microversion
from cyborg.api.controllers.v2 import agents
from cyborg.api.controllers.v2 import arqs
from cyborg.api.controllers.v2 import attributes
from cyborg.api.controllers.v2 import conductors
from cyborg.api.controllers.v2 import deployables
from cyborg.api.controllers.v2 import device_profiles
from cyborg.api.controllers.v2 import devices
from cyborg.api.controllers.v2 import drivers
from cyborg.api.controllers.v2 import limits
from cyborg.api.controllers.v2 import services
from cyborg.api.types import link
from cyborg.api.types import version as version_types

VERSION_ID = 'v2'


class V2Controller(rest.RestController):
    """``GET /v2`` describes the version; resources hang below it."""

    accelerator_requests = arqs.ARQsController()
    agents = agents.AgentsController()
    attributes = attributes.AttributesController()
    conductors = conductors.ConductorsController()
    devices = devices.DevicesController()
    deployables = deployables.DeployablesController()
    device_profiles = device_profiles.DeviceProfilesController()
    drivers = drivers.DriversController()
    limits = limits.LimitsController()
    services = services.ServicesController()

    @expose.expose(version_types.Version)
    def get(self):
        return version_types.Version(
            id='v2.0', status='CURRENT',
            min_version=microversion.MIN_VERSION_STRING,
            max_version=microversion.MAX_VERSION_STRING,
            links=[link.make_link('self', '%s/%s/' % (link.public_url(),
                                                      VERSION_ID))])
