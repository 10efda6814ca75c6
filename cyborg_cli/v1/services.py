"""``openstack accelerator service ...``: what the devices offer."""

import argparse

from osc_lib.cli import format_columns
from osc_lib.command import command

SERVICE_FIELDS = (
    ('host', 'Host'),
    ('driver_name', 'Driver'),
    ('device_uuid', 'Device UUID'),
    ('device_type', 'Device Type'),
    ('services', 'Services'),
)
DISCOVERY_FIELDS = (
    ('host', 'Host'),
    ('added', 'Added'),
    ('removed', 'Removed'),
    ('changed', 'Changed'),
    ('error', 'Error'),
)
_LISTS = frozenset(('services', 'added', 'removed', 'changed'))


def _rows(items: list[dict], fields: tuple) -> tuple[tuple, list[tuple]]:
    """(headings, rows); list fields print comma-separated in a table."""
    headings = tuple(heading for _field, heading in fields)
    rows = [tuple(format_columns.ListColumn(item.get(field) or [])
                  if field in _LISTS else item.get(field)
                  for field, _heading in fields)
            for item in items]
    return headings, rows


class ListServices(command.Lister):
    """List the services (functions) the accelerator devices offer."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only the devices of this compute host')
        parser.add_argument('--driver', metavar='<driver>',
                            help='Only the devices of this driver')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        services = client.list_services(host=parsed_args.host,
                                        driver=parsed_args.driver)
        return _rows(services, SERVICE_FIELDS)


class DiscoverServices(command.Lister):
    """Ask the agents to discover their devices and services now.

    Lists, per host, the devices found since the last discovery (Added),
    gone (Removed) or changed, or why the host's discovery failed.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only this compute host (default: all)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        hosts = client.discover_services(host=parsed_args.host)
        return _rows(hosts, DISCOVERY_FIELDS)
