"""``openstack accelerator device mode ...``: how a device is split."""

import argparse
from typing import Any

from osc_lib.cli import format_columns
from osc_lib.command import command

SHOW_FIELDS = ('uuid', 'hostname', 'mode', 'modes')
SET_FIELDS = ('uuid', 'hostname', 'status', 'mode', 'modes')


def _device_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('device', metavar='<device-uuid>',
                        help='UUID of the device')


def _fields(device: dict[str, Any], names: tuple) -> tuple[tuple, tuple]:
    # NOTE(modes): a table joins the modes by commas; -f json keeps the list.
    values = tuple(format_columns.ListColumn(device.get(name) or [])
                   if name == 'modes' else device.get(name)
                   for name in names)
    return names, values


class ShowDeviceMode(command.ShowOne):
    """Show the partition mode of a device and the modes it offers
    (microversion 2.9).

    The mode is empty for a device without modes, or while its driver's
    options offer several vGPU types at once.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _device_argument(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        return _fields(client.get_device(parsed_args.device), SHOW_FIELDS)


class SetDeviceMode(command.ShowOne):
    """Switch a device to another partition mode (microversion 2.9;
    administrators only by default).

    Nothing may be bound to the device: drain it first. The command waits
    for the device's agent to rearrange it and shows the device in its new
    mode.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _device_argument(parser)
        parser.add_argument('mode', metavar='<mode>',
                            help='One of the modes the device offers, as '
                                 '"device mode show" lists them, e.g. '
                                 '"passthrough" or "vgpu:nvidia-222"')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        device = client.set_device_mode(parsed_args.device, parsed_args.mode)
        return _fields(device, SET_FIELDS)
