"""/v1 accelerators and the driver and service operations, driven with this
project's ``openstack accelerator`` commands on both deployments."""

import os
import shutil
import sys
import uuid

import pytest
import requests

from cyborg.tests import deployments
from cyborg.tests.fixtures import generic_host
from cyborg.tests.functional import test_cli

pytestmark = pytest.mark.functional

FIXTURE = os.path.join(os.path.dirname(generic_host.__file__), 'sysfs',
                       generic_host.NAME)
PRIVSEP_HELPER = os.path.join(os.path.dirname(sys.executable),
                              'privsep-helper')
cli_venvs = test_cli.cli_venvs
explain = test_cli.explain


@pytest.fixture(scope='module')
def nova():
    with deployments.FakeNova() as fake:
        yield fake


@pytest.fixture(scope='module', params=deployments.KINDS)
def target(request, tmp_path_factory, nova):
    """A deployment whose agent runs the fake driver and has the generic
    driver's two backends configured (not enabled) on a simulated host."""
    tmp = tmp_path_factory.mktemp(request.param)
    sysfs = tmp / 'sys'
    shutil.copytree(FIXTURE, sysfs, symlinks=True)
    sections = {section: dict(options) for section, options in
                generic_host.AGENT_OPTIONS.items()}
    sections['agent'] = {'enabled_drivers': 'fake_driver',
                         'sysfs_root': str(sysfs), 'report_interval': 1}
    sections['conductor'] = {'auto_activate_new_devices': True}
    sections['nova'] = nova.section()
    # NOTE(tests): the agent's privileged writes go to the copied tree
    # through a privsep daemon started without sudo (this runs as root).
    sections['cyborg_sys_admin'] = {'helper_command': PRIVSEP_HELPER}
    with deployments.start(request.param, tmp, sections=sections) as found:
        found.sysfs = sysfs
        yield found


@pytest.fixture(params=test_cli.FLAVOURS)
def cli(request, cli_venvs, target):
    return test_cli.Cli(request.param, cli_venvs[request.param], target.url)


def _fails(cli, *args):
    done = cli.run(*args)
    assert done.returncode != 0, explain(cli, done)
    return done.stderr


def _units(cli):
    return {unit['Name']: unit for unit in
            cli.json('accelerator', 'unit', 'list')}


def _override(target, address):
    return (target.sysfs / 'bus' / 'pci' / 'devices' / address /
            'driver_override').read_text().strip()


def test_driver_lifecycle_services_and_attach(cli, target, nova):
    host = target.host
    drivers = {d['Name']: d for d in cli.json('accelerator', 'driver',
                                              'list', '--host', host)}
    assert drivers['fake_driver']['Enabled'] is True
    assert drivers['generic_driver']['Enabled'] is False

    installed = cli.json('accelerator', 'driver', 'install', host,
                         'generic_driver')
    assert installed['enabled'] is True
    assert installed['device_count'] == 2
    assert 'already enabled' in _fails(cli, 'accelerator', 'driver',
                                       'install', host, 'generic_driver')
    assert 'not installed on host' in _fails(
        cli, 'accelerator', 'driver', 'install', host, 'no_such_driver')
    assert 'nowhere' in _fails(cli, 'accelerator', 'driver', 'install',
                               'nowhere', 'generic_driver')

    services = cli.json('accelerator', 'service', 'list', '--host', host,
                        '--driver', 'generic')
    assert sorted(sorted(s['Services']) for s in services) == [
        ['crypto.asym', 'crypto.sym'], ['inference']]
    (found,) = cli.json('accelerator', 'service', 'discover', '--host',
                        host)
    assert (found['Host'], found['Added'], found['Removed'],
            found['Error']) == (host, [], [], None)

    units = _units(cli)
    crypto = units['%s_%s' % (host, generic_host.CRYPTO_PF)]
    fake = units['%s_FakeDevice' % host]
    assert crypto['Device Type'] == 'QAT'

    # To the host: the driver binds the function to the backend's driver.
    attached = cli.json('accelerator', 'attach', 'host', crypto['UUID'],
                        host)
    assert attached['attachments'][0]['host'] == host
    # NOTE(tests): the crypto card's deployable hands out its VFs.
    assert [_override(target, vf) for vf in generic_host.CRYPTO_VFS] == [
        'c6xxvf', 'c6xxvf']
    assert 'already attached' in _fails(
        cli, 'accelerator', 'attach', 'host', crypto['UUID'], host)
    assert 'detach them first' in _fails(
        cli, 'accelerator', 'driver', 'uninstall', host, 'generic_driver')
    assert 'not attached to an instance' in _fails(
        cli, 'accelerator', 'detach', 'instance', crypto['UUID'])
    cli.ok('accelerator', 'detach', 'host', crypto['UUID'])
    assert [_override(target, vf) for vf in generic_host.CRYPTO_VFS] == [
        'vfio-pci', 'vfio-pci']

    # To an instance: an ARQ is bound and Nova hears of it.
    instance = str(uuid.uuid4())
    nova.own(instance, test_cli.PROJECT)
    attached = cli.json('accelerator', 'attach', 'instance', fake['UUID'],
                        instance)
    arq = attached['attachments'][0]['arq_uuid']
    nova.wait_events(instance, 1)
    ((_, (event,)),) = nova.events_of(instance)
    assert (event['name'], event['tag'], event['status']) == (
        'accelerator-request-bound', arq, 'completed')
    cli.ok('accelerator', 'detach', 'instance', fake['UUID'])
    assert _units(cli)['%s_FakeDevice' % host]['Attached To'] in ('', None,
                                                                 [])

    changed = cli.json('accelerator', 'driver', 'update', host,
                       'generic_driver')
    assert changed['enabled'] is True
    cli.ok('accelerator', 'driver', 'uninstall', host, 'generic_driver')
    drivers = {d['Name']: d for d in cli.json('accelerator', 'driver',
                                              'list', '--host', host)}
    assert (drivers['generic_driver']['Enabled'],
            drivers['generic_driver']['Devices']) == (False, 0)
    assert '%s_%s' % (host, generic_host.CRYPTO_PF) not in _units(cli)


def test_operator_accelerator_create_set_show(cli, target):
    name = 'rack-%s-%s' % (cli.flavour, uuid.uuid4().hex[:6])
    created = cli.json('accelerator', 'unit', 'create', name)
    assert created['acc_specs']['remote'] == 1
    updated = cli.json('accelerator', 'unit', 'set', created['uuid'],
                       '--device-type', 'CRYPTO', '--num', '2',
                       '--capability', '{"ipsec": {"aes": {"3des": 50}}}')
    assert updated['acc_specs'] == {
        'remote': 1, 'num': 2, 'device_type': 'CRYPTO',
        'acc_capability': {'ipsec': {'aes': {'3des': 50}}}}
    assert cli.json('accelerator', 'unit', 'show',
                    created['uuid'])['acc_specs'] == updated['acc_specs']
    assert 'already exists' in _fails(cli, 'accelerator', 'unit', 'create',
                                      name)
    raw = requests.get(target.url + '/v1/accelerators/' + created['uuid'],
                       timeout=30)
    assert raw.status_code == 200 and raw.headers['ETag'] == '"2"'
