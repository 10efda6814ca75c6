"""``openstack accelerator driver ...``: drivers on the compute hosts."""

import argparse
from typing import Any

from osc_lib.cli import format_columns
from osc_lib.command import command

# (field, list heading) of a driver, in the order both views show them.
FIELDS = (
    ('host', 'Host'),
    ('name', 'Name'),
    ('driver_name', 'Driver'),
    ('version', 'Version'),
    ('enabled', 'Enabled'),
    ('device_count', 'Devices'),
)
CHANGES = ('added', 'removed', 'changed')


def _show(driver: dict[str, Any]) -> tuple[tuple, tuple]:
    """(names, values) of one driver, with what an update changed."""
    names = [field for field, _heading in FIELDS]
    values = [driver.get(field) for field in names]
    changes = driver.get('changes')
    if isinstance(changes, dict):
        for kind in CHANGES:
            names.append(kind)
            values.append(format_columns.ListColumn(changes.get(kind) or []))
    return tuple(names), tuple(values)


def _add_host_and_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('host', metavar='<host>',
                        help='Compute host the driver is on')
    parser.add_argument('name', metavar='<name>',
                        help='Name of the driver, as "driver list" shows '
                             'it in the Name column')


class ListDrivers(command.Lister):
    """List the accelerator drivers of the compute hosts."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='<host>',
                            help='Only the drivers of this compute host')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        drivers = client.list_drivers(host=parsed_args.host)
        headings = tuple(heading for _field, heading in FIELDS)
        rows = (tuple(driver.get(field) for field, _heading in FIELDS)
                for driver in drivers)
        return headings, rows


class InstallDriver(command.ShowOne):
    """Install an accelerator driver on a compute host."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_host_and_name(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        return _show(client.install_driver(parsed_args.host,
                                           parsed_args.name))


class UninstallDriver(command.Command):
    """Uninstall an accelerator driver from a compute host."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_host_and_name(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        client = self.app.client_manager.accelerator_ops
        client.uninstall_driver(parsed_args.host, parsed_args.name)


class UpdateDriver(command.ShowOne):
    """Update a driver on a compute host, optionally to a new image.

    Shows the driver afterwards with the devices the update added, removed
    and changed.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_host_and_name(parser)
        parser.add_argument('--image', metavar='<image uuid>',
                            help='UUID of the Glance image to update the '
                                 'driver (or its firmware) from')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        return _show(client.update_driver(parsed_args.host, parsed_args.name,
                                          image_uuid=parsed_args.image))
