"""``openstack accelerator conductor list``: conductors, liveness, clocks."""

import argparse

from osc_lib.command import command

FIELDS = (
    ('host', 'Host'),
    ('status', 'Status'),
    ('last_heartbeat', 'Last Heartbeat'),
    ('version', 'Version'),
    ('rpc_version', 'RPC Version'),
    ('clock_skew', 'Clock Skew (s)'),
)


class ListConductors(command.Lister):
    """List the conductors: whether each is up, its last heartbeat, its
    versions and how far its clock is off the database's (microversion
    2.11; administrators only by default).

    Up or down is judged by the database server's clock, not by this
    host's or the API's. A positive clock skew is a conductor clock ahead
    of the database's, in seconds; None until the conductor has measured
    it.
    """

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        headings = tuple(heading for _field, heading in FIELDS)
        rows = [tuple(conductor.get(field) for field, _heading in FIELDS)
                for conductor in client.list_conductors()]
        return headings, rows
