"""``openstack accelerator unit ...``: v1 accelerators, assignable units."""

import argparse
import json
from typing import Any

from cliff import columns
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.command import command

from cyborg_cli import errors

LIST_HEADINGS = ('UUID', 'Name', 'Device Type', 'Num', 'Remote', 'Host',
                 'Attached To')
SHOW_FIELDS = ('uuid', 'name', 'acc_specs', 'host', 'deployable_uuid',
               'attachments')


def _describe(attachment: dict[str, Any]) -> str:
    kind = attachment.get('type')
    if kind == 'instance':
        return 'instance %s' % attachment.get('instance_uuid')
    if kind == 'host':
        return 'host %s' % attachment.get('host')
    return str(kind)


def attached_to(unit: dict[str, Any]) -> list[str]:
    """Each attachment as "instance <uuid>" or "host <name>"."""
    return [_describe(attachment)
            for attachment in unit.get('attachments') or []]


class AttachmentsColumn(columns.FormattableColumn):
    """Attachments: a line each in a table, the API's own list in JSON."""

    def human_readable(self) -> str:
        lines = []
        for attachment in self._value or []:
            line = _describe(attachment)
            if attachment.get('arq_uuid'):
                line += ' (ARQ %s)' % attachment['arq_uuid']
            lines.append(line)
        return '\n'.join(lines)

    def machine_readable(self) -> list[dict[str, Any]]:
        return list(self._value or [])


class SpecsColumn(columns.FormattableColumn):
    """acc_specs: a key=value line each in a table, the dict in JSON."""

    # NOTE(units): osc-lib's DictColumn flattens nested dicts and prints an
    # empty acc_capability as a stray comma; capabilities read better as
    # the JSON a user gives to "unit set --capability".
    ORDER = ('device_type', 'num', 'remote', 'acc_capability')

    def human_readable(self) -> str:
        specs = self._value or {}
        keys = [key for key in self.ORDER if key in specs]
        keys += sorted(key for key in specs if key not in self.ORDER)
        return '\n'.join(
            '%s=%s' % (key, json.dumps(specs[key], sort_keys=True)
                       if isinstance(specs[key], (dict, list))
                       else specs[key])
            for key in keys)

    def machine_readable(self) -> dict[str, Any]:
        return dict(self._value or {})


def _remote(specs: dict[str, Any]) -> bool | None:
    # NOTE(units): the API keeps 0 or 1; yes or no is what it means.
    remote = specs.get('remote')
    return None if remote is None else bool(remote)


def list_row(unit: dict[str, Any]) -> tuple:
    specs = unit.get('acc_specs') or {}
    return (unit.get('uuid'), unit.get('name'), specs.get('device_type'),
            specs.get('num'), _remote(specs), unit.get('host'),
            format_columns.ListColumn(attached_to(unit)))


def show(unit: dict[str, Any]) -> tuple[tuple, tuple]:
    """(names, values) of one accelerator for a ShowOne: its own fields."""
    values = (unit.get('uuid'), unit.get('name'),
              SpecsColumn(unit.get('acc_specs') or {}),
              unit.get('host'), unit.get('deployable_uuid'),
              AttachmentsColumn(unit.get('attachments') or []))
    return SHOW_FIELDS, values


def _json_object(text: str) -> dict[str, Any]:
    """argparse type: a JSON object."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError('not JSON: %s' % exc) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('not a JSON object: %s' % text)
    return value


def _non_negative(text: str) -> int:
    """argparse type: an integer of 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('not an integer: %s' % text) from None
    if value < 0:
        raise argparse.ArgumentTypeError('must not be negative: %s' % text)
    return value


def _add_uuid(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('uuid', metavar='<uuid>',
                        help='UUID of the accelerator')


class ListUnits(command.Lister):
    """List the accelerators (assignable units) of the v1 API."""

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        return LIST_HEADINGS, [list_row(unit) for unit in client.list_units()]


class ShowUnit(command.ShowOne):
    """Show one accelerator (assignable unit)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_uuid(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        unit, _etag = client.get_unit(parsed_args.uuid)
        return show(unit)


class CreateUnit(command.ShowOne):
    """Create an accelerator (assignable unit) and show it."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help='Name of the new accelerator')
        parser.add_argument('--uuid', metavar='<uuid>',
                            help='UUID to give it (default: the API picks '
                                 'one)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        return show(client.create_unit(parsed_args.name,
                                       uuid=parsed_args.uuid))


class SetUnit(command.ShowOne):
    """Change the specs of an accelerator (assignable unit) and show it.

    Only the given fields change. The update is conditional on the
    accelerator being as it was read (If-Match), so a concurrent change by
    another client is refused rather than overwritten.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_uuid(parser)
        parser.add_argument('--device-type', metavar='<type>',
                            help='Device type, e.g. GPU or FPGA')
        parser.add_argument('--num', metavar='<num>', type=_non_negative,
                            help='Number of devices in the unit')
        where = parser.add_mutually_exclusive_group()
        where.add_argument('--remote', dest='remote', action='store_const',
                           const=1, help='The devices are remote')
        where.add_argument('--local', dest='remote', action='store_const',
                           const=0, help='The devices are local to the host')
        parser.add_argument('--capability', metavar='<json>',
                            type=_json_object,
                            help='Capabilities as a JSON object; replaces '
                                 'the ones the accelerator has')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        given = {'device_type': parsed_args.device_type,
                 'num': parsed_args.num,
                 'remote': parsed_args.remote,
                 'acc_capability': parsed_args.capability}
        given = {key: value for key, value in given.items()
                 if value is not None}
        if not given:
            raise exceptions.CommandError(
                'Nothing to set: give --device-type, --num, --remote, '
                '--local or --capability.')
        client = self.app.client_manager.accelerator_ops
        unit, etag = client.get_unit(parsed_args.uuid)
        if not etag:
            raise exceptions.CommandError(
                'The accelerator API sent no ETag for %s, so it cannot be '
                'changed safely.' % parsed_args.uuid)
        specs = dict(unit.get('acc_specs') or {}, **given)
        try:
            updated = client.set_unit_specs(parsed_args.uuid, specs, etag)
        except errors.ApiError as exc:
            if exc.status not in (409, 412):
                raise
            raise exceptions.CommandError(
                'Accelerator %s was changed by another client after it was '
                'read; nothing was set. Look at it again and retry. (%s)'
                % (parsed_args.uuid, exc.message)) from exc
        return show(updated)
