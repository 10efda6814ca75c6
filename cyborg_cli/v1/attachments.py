"""``openstack accelerator attach|detach ...``: where a unit is used."""

import argparse
from typing import Any

from osc_lib import exceptions
from osc_lib.command import command

from cyborg_cli.v1 import units

_ARTICLED = {'instance': 'an instance', 'host': 'a host'}


def _add_unit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('unit', metavar='<unit uuid>',
                        help='UUID of the accelerator (assignable unit)')


def _detach(client: Any, uuid: str, kind: str) -> None:
    """Detach a unit, but only from the kind of target the user named.

    One DELETE detaches whatever the unit is attached to; reading it first
    keeps "detach instance" from silently detaching a host, and the reverse.
    """
    unit, _etag = client.get_unit(uuid)
    kinds = {attachment.get('type')
             for attachment in unit.get('attachments') or []}
    if kind not in kinds:
        where = ', '.join(units.attached_to(unit)) or 'nothing'
        raise exceptions.CommandError(
            'Accelerator %s is not attached to %s (it is attached to %s); '
            'nothing was detached.' % (uuid, _ARTICLED[kind], where))
    client.detach_unit(uuid)


class _Attach(command.ShowOne):
    """Attach an accelerator (assignable unit) to ``kind``."""

    kind = ''
    target_help = ''

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_unit(parser)
        parser.add_argument('target', metavar='<%s>' % self.kind,
                            help=self.target_help)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        field = 'instance_uuid' if self.kind == 'instance' else 'host'
        unit = client.attach_unit(parsed_args.unit,
                                  {field: parsed_args.target})
        return units.show(unit)


class _Detach(command.Command):
    """Detach an accelerator (assignable unit) from its ``kind``."""

    kind = ''

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_unit(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> None:
        _detach(self.app.client_manager.accelerator_ops, parsed_args.unit,
                self.kind)


class AttachInstance(_Attach):
    """Attach an accelerator (assignable unit) to a server instance."""

    kind = 'instance'
    target_help = 'UUID of the server instance'


class DetachInstance(_Detach):
    """Detach an accelerator (assignable unit) from its server instance."""

    kind = 'instance'


class AttachHost(_Attach):
    """Attach an accelerator (assignable unit) to a compute host."""

    kind = 'host'
    target_help = 'Name of the compute host'


class DetachHost(_Detach):
    """Detach an accelerator (assignable unit) from its compute host."""

    kind = 'host'
