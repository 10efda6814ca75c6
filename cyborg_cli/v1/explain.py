"""``openstack accelerator device profile explain``: why a device profile
can or cannot be scheduled, deployable by deployable."""

import argparse

from osc_lib.command import command

HEADINGS = ('Group', 'Deployable', 'Host', 'Resource Class', 'Schedulable',
            'Reason', 'Detail')


def _deployable(candidate: dict) -> str | None:
    """The Deployable cell: the deployable's name, or for a device that
    offers nothing (none of its own) the device."""
    if candidate.get('deployable_uuid') is None and candidate.get(
            'device_uuid'):
        return '(device %s)' % candidate['device_uuid']
    return candidate.get('deployable_name')


class ExplainDeviceProfile(command.Lister):
    """Show, for each request group of a device profile, every deployable
    of the cloud: whether it can serve the group and, when it cannot, the
    first reason why (microversion 2.8); then every device that offers
    nothing, and why (2.10; an older server leaves them out).

    Placement is asked what Nova's scheduler would ask for each group; the
    caller's project is the one whose quota is checked.
    """

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument('device_profile', metavar='<uuid-or-name>',
                            help='UUID or name of the device profile')
        parser.add_argument('--member-of', metavar='<query>',
                            help='Placement aggregates to limit the '
                                 'candidates to, as Nova passes them: an '
                                 'aggregate UUID, or "in:" and UUIDs '
                                 'separated by commas')
        parser.add_argument('--group', metavar='<index>', type=int,
                            help='Show only this request group (from 0)')
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple:
        client = self.app.client_manager.accelerator_ops
        groups = client.explain_profile(parsed_args.device_profile,
                                        member_of=parsed_args.member_of)
        rows = [(group.get('group'), _deployable(candidate),
                 candidate.get('hostname'), candidate.get('resource_class'),
                 candidate.get('schedulable'), candidate.get('reason') or '',
                 candidate.get('detail') or '')
                for group in groups
                if parsed_args.group is None or
                group.get('group') == parsed_args.group
                for candidate in group.get('candidates') or ()]
        return HEADINGS, rows
