"""Drivers and services (microversion 2.5) as the API shows them."""

import wsme.types as wtypes

from cyborg.api.types import base


class Changes(wtypes.Base):
    """Device uuids a driver operation or a discovery added, removed or
    changed on a host."""

    added = [wtypes.text]
    removed = [wtypes.text]
    changed = [wtypes.text]

    _wsme_attr_order = ('added', 'removed', 'changed')


class Driver(wtypes.Base):
    """A driver an agent can load, and whether it is enabled."""

    host = wtypes.text
    name = wtypes.text
    driver_name = wtypes.text
    version = wtypes.text
    enabled = bool
    device_count = int
    #: Only in the answer to an update: what reloading the driver changed.
    changes = Changes

    _wsme_attr_order = ('host', 'name', 'driver_name', 'version', 'enabled',
                        'device_count', 'changes')

    @classmethod
    def from_entry(cls, entry):
        """The view of a conductor's driver entry (a dict)."""
        found = dict(entry)
        if 'changes' in found:
            found['changes'] = Changes(**found['changes'])
        return cls(**found)


class DriverCollection(wtypes.Base):
    """``{"drivers": [...]}``."""

    drivers = [Driver]

    @classmethod
    def from_entries(cls, entries):
        return cls(drivers=[Driver.from_entry(entry) for entry in entries])


class DriverInstall(base.Body):
    """``POST /v2/drivers``: which driver to install on which host."""

    host = wtypes.text
    name = wtypes.text


class DriverUpdate(base.Body):
    """``PATCH /v2/drivers/{host}/{name}``: an image to load, or nothing
    (reload the driver's options)."""

    image_uuid = wtypes.text


class Service(wtypes.Base):
    """What one device offers, as its driver discovered it."""

    host = wtypes.text
    driver_name = wtypes.text
    device_uuid = wtypes.text
    device_type = wtypes.text
    services = [wtypes.text]

    _wsme_attr_order = ('host', 'driver_name', 'device_uuid', 'device_type',
                        'services')


class ServiceCollection(wtypes.Base):
    """``{"services": [...]}``."""

    services = [Service]

    @classmethod
    def from_entries(cls, entries):
        return cls(services=[Service(**entry) for entry in entries])


class Discover(base.Body):
    """``POST /v2/services/discover``: one host, or none for every host."""

    host = wtypes.text


class HostDiscovery(Changes):
    """What a discovery on one host changed, or why it failed."""

    host = wtypes.text
    error = wtypes.text

    _wsme_attr_order = ('host', 'error', 'added', 'removed', 'changed')


class DiscoveryCollection(wtypes.Base):
    """``{"hosts": [...]}``."""

    hosts = [HostDiscovery]

    @classmethod
    def from_entries(cls, entries):
        return cls(hosts=[HostDiscovery(**entry) for entry in entries])
