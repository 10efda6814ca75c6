"""The OpenStackClient plugin hooks: API name, version option, client."""

import argparse
import logging
from typing import Any

from keystoneauth1 import adapter as ksa_adapter
from osc_lib import utils

from cyborg_cli import client

LOG = logging.getLogger(__name__)

# NOTE(plugin): python-cyborgclient and python-openstackclient both own the
# API name "accelerator" and its --os-accelerator-api-version option; a
# second plugin under that name would be skipped or clash in argparse, so
# these commands live in a group of their own (openstack.accelerator_ops.v1)
# with command names none of the others use.
API_NAME = 'accelerator_ops'
API_VERSION_OPTION = 'os_accelerator_ops_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = ('1',)


def make_client(instance: Any) -> client.Client:
    """The client for one command, on the session OSC authenticated."""
    # NOTE(plugin): the adapter resolves the endpoint as every keystoneauth
    # client does: an explicit override (accelerator_endpoint_override in
    # clouds.yaml or OS_ACCELERATOR_ENDPOINT_OVERRIDE), else the auth
    # plugin's endpoint (--os-endpoint), else the catalog for the region
    # and interface OSC was given.
    override = instance.get_configuration().get(
        '%s_endpoint_override' % client.SERVICE_TYPE)
    adapter = ksa_adapter.Adapter(
        session=instance.session,
        service_type=client.SERVICE_TYPE,
        region_name=instance.region_name or None,
        interface=instance.interface or None,
        endpoint_override=override or None,
        client_name='cyborg-cli',
    )
    LOG.debug('accelerator_ops client on %s (region %s, interface %s)',
              override or 'the catalog endpoint', instance.region_name,
              instance.interface)
    return client.Client(adapter)


def build_option_parser(
        parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add this plugin's global option to OSC's parser."""
    parser.add_argument(
        '--os-accelerator-ops-api-version',
        metavar='<accelerator-ops-api-version>',
        default=utils.env('OS_ACCELERATOR_OPS_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='Version of the accelerator driver, service and unit '
             'commands, default=%s (Env: OS_ACCELERATOR_OPS_API_VERSION)'
             % DEFAULT_API_VERSION)
    return parser
