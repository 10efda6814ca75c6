"""``openstack accelerator limit list``: a project's quotas and usage."""

import argparse
from typing import Any

from cliff import columns
from osc_lib.command import command

FIELDS = (
    ('resource', 'Resource'),
    ('resource_class', 'Resource Class'),
    ('limit', 'Limit'),
    ('usage', 'Usage'),
)
#: The API's "no limit".
UNLIMITED = -1


class LimitColumn(columns.FormattableColumn):
    """A limit: "unlimited" for -1 in a table; the API's number in
    machine-readable output (-f json, -f yaml)."""

    def human_readable(self) -> str:
        if self._value == UNLIMITED:
            return 'unlimited'
        return '' if self._value is None else str(self._value)

    def machine_readable(self) -> Any:
        return self._value


class ListLimits(command.Lister):
    """List the quota limits and usage of a project per resource class.

    The caller's project unless --project names another (administrators
    only by default). A limit of -1 shows as "unlimited" in a table (-1 with
    -f json or -f yaml).
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            help='ID of the project to show (default: the '
                                 'project of the token)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        limits = client.list_limits(project_id=parsed_args.project)
        headings = tuple(heading for _field, heading in FIELDS)
        rows = [(entry.get('resource'), entry.get('resource_class'),
                 LimitColumn(entry.get('limit')), entry.get('usage'))
                for entry in limits]
        return headings, rows
