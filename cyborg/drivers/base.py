"""The contract every accelerator driver implements."""

import abc


class AcceleratorDriver(abc.ABC):
    """A driver finds one kind of accelerator and reports it as plain data.

    Drivers are loaded by name from the ``cyborg.accelerator.driver`` entry
    point namespace, built with no arguments, and read their own options from
    ``cyborg.conf``. They return ``cyborg.drivers.report`` objects and never
    talk to the database, RPC or Placement.
    """

    #: Name recorded as the deployables' driver_name.
    name = None

    @abc.abstractmethod
    def discover(self, host):
        """Return the list of ``report.Device`` found on this host.

        :param host: the agent's host name, used to make deployable names
            unique across hosts.
        """
