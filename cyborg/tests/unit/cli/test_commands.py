"""Each accelerator_ops command: the request it sends and what it shows."""

import json
from unittest import mock

from osc_lib import exceptions
import pytest

from cyborg.tests.unit.cli import fakes
from cyborg.tests.unit.cli.fakes import NO_BODY
from cyborg.tests.unit.cli.fakes import ROOT
from cyborg.tests.unit.cli.fakes import plain
from cyborg.tests.unit.cli.fakes import response
from cyborg.tests.unit.cli.fakes import run
from cyborg.tests.unit.cli.fakes import shown
from cyborg_cli import client as cli_client
from cyborg_cli import errors
from cyborg_cli.v1 import attachments
from cyborg_cli.v1 import drivers
from cyborg_cli.v1 import explain
from cyborg_cli.v1 import limits
from cyborg_cli.v1 import modes
from cyborg_cli.v1 import services
from cyborg_cli.v1 import units

OPS = {'OpenStack-API-Version': 'accelerator 2.5'}
LIMITS = {'OpenStack-API-Version': 'accelerator 2.7'}
EXPLAIN = {'OpenStack-API-Version': 'accelerator 2.10'}
EXPLAIN_2_8 = {'OpenStack-API-Version': 'accelerator 2.8'}
MODES = {'OpenStack-API-Version': 'accelerator 2.9'}
UUID = '6f1c2a62-0d51-4bd4-9c07-2d0b0c8f0a11'
INSTANCE = '0b4c3d7e-5a3c-4d8e-9f61-73e0d4a1b2c3'
DRIVER = {'host': 'cn1', 'name': 'gpu', 'driver_name': 'nvidia_gpu_driver',
          'version': '1.2', 'enabled': True, 'device_count': 2}
UNIT = {'uuid': UUID, 'name': 'vgpu-pool',
        'acc_specs': {'remote': 0, 'num': 2, 'device_type': 'GPU',
                      'acc_capability': {'memory': '16G'}},
        'host': 'cn1', 'deployable_uuid': None, 'links': [],
        'attachments': [{'type': 'instance', 'instance_uuid': INSTANCE,
                         'arq_uuid': 'a1'}]}
ETAG = '"3e1f"'


def fault(status, text):
    """The error envelope of cyborg/api/errors.py."""
    inner = json.dumps({'faultcode': 'Client' if status < 500 else 'Server',
                        'faultstring': text, 'debuginfo': None})
    return response(status, {'error_message': inner})


def unit(**changes):
    return dict(UNIT, **changes)


# --- drivers ----------------------------------------------------------------


@pytest.mark.parametrize('argv, url', [
    ([], ROOT + '/v2/drivers'),
    (['--host', 'cn 1'], ROOT + '/v2/drivers?host=cn+1'),
])
def test_driver_list(argv, url):
    (headings, rows), calls = run(drivers.ListDrivers, argv,
                                  response(200, {'drivers': [DRIVER]}))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('GET', url, NO_BODY)]
    assert calls[0].headers.items() >= OPS.items()
    assert headings == ('Host', 'Name', 'Driver', 'Version', 'Enabled',
                        'Devices')
    assert list(rows) == [('cn1', 'gpu', 'nvidia_gpu_driver', '1.2', True,
                           2)]


def test_driver_install_shows_the_new_driver():
    (names, values), calls = run(drivers.InstallDriver, ['cn1', 'gpu'],
                                 response(201, DRIVER))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('POST', ROOT + '/v2/drivers', {'host': 'cn1', 'name': 'gpu'})]
    assert calls[0].headers.items() >= OPS.items()
    assert shown(names, values) == DRIVER


def test_driver_uninstall_quotes_host_and_name():
    result, calls = run(drivers.UninstallDriver, ['cn1', 'my/driver'],
                        response(204))
    assert result is None
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('DELETE', ROOT + '/v2/drivers/cn1/my%2Fdriver', NO_BODY)]
    assert calls[0].headers.items() >= OPS.items()


@pytest.mark.parametrize('argv, body', [
    ([], {}),
    (['--image', 'img-1'], {'image_uuid': 'img-1'}),
])
def test_driver_update_shows_what_changed(argv, body):
    updated = dict(DRIVER, version='1.3',
                   changes={'added': ['d3', 'd4'], 'removed': [],
                            'changed': ['d1']})
    (names, values), calls = run(drivers.UpdateDriver, ['cn1', 'gpu', *argv],
                                 response(200, updated))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('PATCH', ROOT + '/v2/drivers/cn1/gpu', body)]
    assert calls[0].headers.items() >= OPS.items()
    assert shown(names, values) == dict(
        DRIVER, version='1.3', added=['d3', 'd4'], removed=[],
        changed=['d1'])
    assert values[names.index('added')].human_readable() == 'd3, d4'


# --- services ---------------------------------------------------------------


@pytest.mark.parametrize('argv, query', [
    ([], ''),
    (['--host', 'cn1'], '?host=cn1'),
    (['--host', 'cn1', '--driver', 'gpu'], '?host=cn1&driver=gpu'),
])
def test_service_list(argv, query):
    listed = {'host': 'cn1', 'driver_name': 'gpu', 'device_uuid': 'd1',
              'device_type': 'GPU', 'services': ['vgpu', 'cuda']}
    (headings, rows), calls = run(services.ListServices, argv,
                                  response(200, {'services': [listed]}))
    assert [(c.method, c.url) for c in calls] == [
        ('GET', ROOT + '/v2/services' + query)]
    assert calls[0].headers.items() >= OPS.items()
    assert headings == ('Host', 'Driver', 'Device UUID', 'Device Type',
                        'Services')
    assert [plain(row) for row in rows] == [
        ('cn1', 'gpu', 'd1', 'GPU', ['vgpu', 'cuda'])]


@pytest.mark.parametrize('argv, body', [
    ([], {}),
    (['--host', 'cn2'], {'host': 'cn2'}),
])
def test_service_discover(argv, body):
    hosts = [{'host': 'cn1', 'added': ['d5'], 'removed': [], 'changed': [],
              'error': None},
             {'host': 'cn2', 'added': [], 'removed': [], 'changed': [],
              'error': 'agent did not answer'}]
    (headings, rows), calls = run(services.DiscoverServices, argv,
                                  response(200, {'hosts': hosts}))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('POST', ROOT + '/v2/services/discover', body)]
    assert calls[0].headers.items() >= OPS.items()
    assert headings == ('Host', 'Added', 'Removed', 'Changed', 'Error')
    assert [plain(row) for row in rows] == [
        ('cn1', ['d5'], [], [], None),
        ('cn2', [], [], [], 'agent did not answer')]


def test_a_list_without_its_key_is_an_error():
    with pytest.raises(exceptions.CommandError, match='"services" list'):
        run(services.ListServices, [], response(200, {'service': []}))


# --- limits -----------------------------------------------------------------


QUOTAS = {'project_id': 'p1', 'limits': [
    {'resource': 'class:CUSTOM_QAT', 'resource_class': 'CUSTOM_QAT',
     'limit': -1, 'usage': 0},
    {'resource': 'class:FPGA', 'resource_class': 'FPGA', 'limit': 4,
     'usage': 1},
    {'resource': 'class:VGPU', 'resource_class': 'VGPU', 'limit': 0,
     'usage': 2}]}


@pytest.mark.parametrize('argv, url', [
    ([], ROOT + '/v2/limits'),
    (['--project', 'p 2'], ROOT + '/v2/limits?project_id=p+2'),
])
def test_limit_list(argv, url):
    (headings, rows), calls = run(limits.ListLimits, argv,
                                  response(200, QUOTAS))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('GET', url, NO_BODY)]
    assert calls[0].headers.items() >= LIMITS.items()
    assert headings == ('Resource', 'Resource Class', 'Limit', 'Usage')
    assert [plain(row) for row in rows] == [
        ('class:CUSTOM_QAT', 'CUSTOM_QAT', -1, 0),
        ('class:FPGA', 'FPGA', 4, 1),
        ('class:VGPU', 'VGPU', 0, 2)]
    # NOTE(tests): a table says "unlimited"; -f json keeps the API's -1.
    assert [row[2].human_readable() for row in rows] == [
        'unlimited', '4', '0']


def test_limit_list_of_a_project_without_limits():
    (headings, rows), _calls = run(
        limits.ListLimits, [], response(200, {'project_id': 'p1',
                                              'limits': []}))
    assert list(rows) == []


def test_limit_list_shows_the_api_refusal():
    with pytest.raises(errors.ApiError) as caught:
        run(limits.ListLimits, ['--project', 'p2'],
            fault(403, 'Policy doesn\'t allow cyborg:limit:other_project '
                       'to be performed.'))
    assert caught.value.status == 403
    assert 'cyborg:limit:other_project' in str(caught.value)


def test_limit_list_before_2_7_says_which_version_it_needs():
    with pytest.raises(errors.ApiError, match='microversion 2.7'):
        run(limits.ListLimits, [],
            fault(404, 'GET /v2/limits exists from microversion 2.7; send '
                       '"OpenStack-API-Version: accelerator 2.7" or later.'))


# --- device profile explain -------------------------------------------------


def candidate(name, rc, reason=None, detail=None, host='cn1'):
    return {'deployable_uuid': 'd-' + name, 'deployable_name': name,
            'device_uuid': 'dev-' + name, 'hostname': host,
            'resource_class': rc, 'rp_uuid': 'rp-' + name,
            'schedulable': reason is None, 'reason': reason,
            'detail': detail}


EXPLAINED = {
    'device_profile': {'uuid': UUID, 'name': 'fpga'},
    'project_id': 'p1', 'member_of': None,
    'groups': [
        {'group': 0, 'resources': {'FPGA': 1}, 'required': ['CUSTOM_X'],
         'candidates': [
             candidate('cn1_fpga0', 'FPGA'),
             candidate('cn1_fpga1', 'FPGA', 'device_not_ready',
                       'its device is maintaining'),
             candidate('cn1_gpu0', 'PGPU', 'resource_class',
                       'it offers PGPU; the group asks for FPGA')]},
        {'group': 1, 'resources': {'PGPU': 1}, 'required': [],
         'candidates': [
             candidate('cn1_fpga0', 'FPGA', 'resource_class',
                       'it offers FPGA; the group asks for PGPU'),
             candidate('cn1_gpu0', 'PGPU', 'no_capacity',
                       'used 1 of 1 (0 reserved); the group asks for 1')]},
    ]}


@pytest.mark.parametrize('argv, url', [
    (['fpga'], ROOT + '/v2/device_profiles/fpga/candidates'),
    (['my profile/1', '--member-of', 'in:a,b'],
     ROOT + '/v2/device_profiles/my%20profile%2F1/candidates'
     '?member_of=in%3Aa%2Cb'),
])
def test_device_profile_explain_shows_every_deployable(argv, url):
    (headings, rows), calls = run(explain.ExplainDeviceProfile, argv,
                                  response(200, EXPLAINED))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('GET', url, NO_BODY)]
    assert calls[0].headers.items() >= EXPLAIN.items()
    assert headings == ('Group', 'Deployable', 'Host', 'Resource Class',
                        'Schedulable', 'Reason', 'Detail')
    assert [plain(row) for row in rows] == [
        (0, 'cn1_fpga0', 'cn1', 'FPGA', True, '', ''),
        (0, 'cn1_fpga1', 'cn1', 'FPGA', False, 'device_not_ready',
         'its device is maintaining'),
        (0, 'cn1_gpu0', 'cn1', 'PGPU', False, 'resource_class',
         'it offers PGPU; the group asks for FPGA'),
        (1, 'cn1_fpga0', 'cn1', 'FPGA', False, 'resource_class',
         'it offers FPGA; the group asks for PGPU'),
        (1, 'cn1_gpu0', 'cn1', 'PGPU', False, 'no_capacity',
         'used 1 of 1 (0 reserved); the group asks for 1')]


def test_device_profile_explain_shows_devices_that_offer_nothing():
    nothing = dict(candidate('x', None, 'device_offers_nothing',
                             'it runs its golden (factory) image'),
                   deployable_uuid=None, deployable_name=None,
                   device_uuid='dev-golden', rp_uuid=None)
    body = dict(EXPLAINED, groups=[dict(EXPLAINED['groups'][0], candidates=[
        candidate('cn1_fpga0', 'FPGA'), nothing])])
    (_headings, rows), _calls = run(explain.ExplainDeviceProfile, ['fpga'],
                                    response(200, body))
    assert [plain(row) for row in rows][-1] == (
        0, '(device dev-golden)', 'cn1', None, False,
        'device_offers_nothing', 'it runs its golden (factory) image')


def test_device_profile_explain_of_a_server_before_2_10():
    (_headings, rows), calls = run(
        explain.ExplainDeviceProfile, ['fpga'],
        fault(406, 'Version 2.10 is not supported by the API. Minimum is '
                   '2.0 and maximum is 2.9.'),
        response(200, EXPLAINED))
    assert [c.headers[cli_client.VERSION_HEADER] for c in calls] == [
        'accelerator 2.10', 'accelerator 2.8']
    assert calls[1].headers.items() >= EXPLAIN_2_8.items()
    assert len(list(rows)) == 5


def test_device_profile_explain_of_one_group():
    (_headings, rows), _calls = run(explain.ExplainDeviceProfile,
                                    ['fpga', '--group', '1'],
                                    response(200, EXPLAINED))
    assert [(row[0], row[1], row[5]) for row in rows] == [
        (1, 'cn1_fpga0', 'resource_class'), (1, 'cn1_gpu0', 'no_capacity')]


def test_device_profile_explain_of_a_cloud_without_deployables():
    body = dict(EXPLAINED, groups=[{'group': 0, 'resources': {'FPGA': 1},
                                    'required': [], 'candidates': []}])
    (_headings, rows), _calls = run(explain.ExplainDeviceProfile, ['fpga'],
                                    response(200, body))
    assert list(rows) == []


@pytest.mark.parametrize('status, text', [
    (404, 'Device profile nope could not be found.'),
    (400, 'Invalid input: member_of takes an aggregate uuid'),
    (503, 'Placement is unavailable: [placement] is not configured on the '
          'conductor'),
    (404, 'GET /v2/device_profiles/{uuid_or_name}/candidates exists from '
          'microversion 2.8'),
])
def test_device_profile_explain_shows_the_api_refusal(status, text):
    with pytest.raises(errors.ApiError) as caught:
        run(explain.ExplainDeviceProfile, ['nope', '--member-of', 'x'],
            fault(status, text))
    assert caught.value.status == status
    assert text in str(caught.value)


def test_device_profile_explain_group_must_be_a_number():
    command = explain.ExplainDeviceProfile(mock.Mock(), None)
    with pytest.raises(SystemExit):
        command.get_parser('openstack test').parse_args(
            ['fpga', '--group', 'first'])


# --- device partition modes -------------------------------------------------


DEVICE = {'uuid': UUID, 'type': 'GPU', 'vendor': '10de', 'model': '1eb8',
          'std_board_info': '{"product_id": "1eb8"}',
          'vendor_board_info': '', 'hostname': 'cn1', 'status': 'ready',
          'status_reason': None, 'services': [], 'health': 'ok',
          'mode': 'passthrough',
          'modes': ['passthrough', 'vgpu:nvidia-222', 'vgpu:nvidia-223']}
MODE_PATH = ROOT + '/v2/devices/' + UUID


def test_device_mode_show():
    (names, values), calls = run(modes.ShowDeviceMode, [UUID],
                                 response(200, DEVICE))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('GET', MODE_PATH, NO_BODY)]
    assert calls[0].headers.items() >= MODES.items()
    assert shown(names, values) == {
        'uuid': UUID, 'hostname': 'cn1', 'mode': 'passthrough',
        'modes': ['passthrough', 'vgpu:nvidia-222', 'vgpu:nvidia-223']}
    # NOTE(tests): a table lists the modes on one line, by commas.
    assert values[3].human_readable() == (
        'passthrough, vgpu:nvidia-222, vgpu:nvidia-223')


def test_device_mode_show_of_a_device_without_modes():
    device = dict(DEVICE, type='FPGA', mode=None, modes=[])
    (names, values), _calls = run(modes.ShowDeviceMode, [UUID],
                                  response(200, device))
    assert shown(names, values) == {'uuid': UUID, 'hostname': 'cn1',
                                    'mode': None, 'modes': []}


def test_device_mode_show_quotes_the_device():
    _result, calls = run(modes.ShowDeviceMode, ['a/b c'],
                         response(200, DEVICE))
    assert calls[0].url == ROOT + '/v2/devices/a%2Fb%20c'


def test_device_mode_set_shows_the_device_in_its_new_mode():
    switched = dict(DEVICE, mode='vgpu:nvidia-222')
    (names, values), calls = run(modes.SetDeviceMode,
                                 [UUID, 'vgpu:nvidia-222'],
                                 response(200, switched))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('POST', MODE_PATH + '/mode', {'mode': 'vgpu:nvidia-222'})]
    assert calls[0].headers.items() >= MODES.items()
    assert shown(names, values) == {
        'uuid': UUID, 'hostname': 'cn1', 'status': 'ready',
        'mode': 'vgpu:nvidia-222',
        'modes': ['passthrough', 'vgpu:nvidia-222', 'vgpu:nvidia-223']}


@pytest.mark.parametrize('status, text', [
    (409, 'Device %s cannot change its mode while accelerator requests are '
          'bound to it: 0b4c3d7e-5a3c-4d8e-9f61-73e0d4a1b2c3.' % UUID),
    (409, 'Device %s could not change to the mode vgpu:nvidia-222: '
          'placement refused the reshape' % UUID),
    (400, 'Device %s does not offer the mode vgpu:nvidia-999; it offers '
          'passthrough, vgpu:nvidia-222.' % UUID),
    (503, 'The agent of host cn1 did not answer: MessagingTimeout'),
    (404, 'POST /v2/devices/{uuid}/mode exists from microversion 2.9'),
])
def test_device_mode_set_shows_the_api_refusal(status, text):
    with pytest.raises(errors.ApiError) as caught:
        run(modes.SetDeviceMode, [UUID, 'vgpu:nvidia-999'],
            fault(status, text))
    assert caught.value.status == status
    assert str(caught.value) == text


def test_device_mode_set_needs_a_mode():
    command = modes.SetDeviceMode(mock.Mock(), None)
    with pytest.raises(SystemExit):
        command.get_parser('openstack test').parse_args([UUID])


# --- units ------------------------------------------------------------------


def test_unit_list_reads_the_singular_key_without_a_microversion():
    host_unit = unit(uuid='u2', name='fpga', host=None,
                     acc_specs={'remote': 1, 'num': 1, 'device_type': None,
                                'acc_capability': {}},
                     attachments=[{'type': 'host', 'host': 'cn2'}])
    (headings, rows), calls = run(
        units.ListUnits, [],
        response(200, {'accelerator': [UNIT, host_unit]}))
    assert [(c.method, c.url) for c in calls] == [
        ('GET', ROOT + '/v1/accelerators')]
    assert 'OpenStack-API-Version' not in calls[0].headers
    assert headings == ('UUID', 'Name', 'Device Type', 'Num', 'Remote',
                        'Host', 'Attached To')
    assert [plain(row) for row in rows] == [
        (UUID, 'vgpu-pool', 'GPU', 2, False, 'cn1',
         ['instance ' + INSTANCE]),
        ('u2', 'fpga', None, 1, True, None, ['host cn2'])]


def test_unit_show():
    (names, values), calls = run(units.ShowUnit, [UUID],
                                 response(200, UNIT, {'ETag': ETAG}))
    assert [(c.method, c.url) for c in calls] == [
        ('GET', ROOT + '/v1/accelerators/' + UUID)]
    assert shown(names, values) == {
        'uuid': UUID, 'name': 'vgpu-pool', 'acc_specs': UNIT['acc_specs'],
        'host': 'cn1', 'deployable_uuid': None,
        'attachments': UNIT['attachments']}
    table = dict(zip(names, values, strict=True))
    assert table['attachments'].human_readable() == (
        'instance %s (ARQ a1)' % INSTANCE)
    assert table['acc_specs'].human_readable() == (
        'device_type=GPU\nnum=2\nremote=0\nacc_capability={"memory": "16G"}')


def test_unit_show_specs_with_no_capability_and_unknown_keys():
    specs = {'remote': 1, 'num': 1, 'device_type': None,
             'acc_capability': {}, 'vendor': 'x'}
    (names, values), _calls = run(units.ShowUnit, [UUID],
                                  response(200, unit(acc_specs=specs)))
    column = values[names.index('acc_specs')]
    assert column.human_readable() == (
        'device_type=None\nnum=1\nremote=1\nacc_capability={}\nvendor=x')
    assert column.machine_readable() == specs


def test_unit_show_lists_every_attachment_on_a_line():
    both = [{'type': 'host', 'host': 'cn1'}, UNIT['attachments'][0]]
    (names, values), _calls = run(units.ShowUnit, [UUID],
                                  response(200, unit(attachments=both)))
    column = values[names.index('attachments')]
    assert column.human_readable() == (
        'host cn1\ninstance %s (ARQ a1)' % INSTANCE)


@pytest.mark.parametrize('argv, body, location', [
    (['vgpu-pool'], {'name': 'vgpu-pool'},
     '/accelerator/v1/accelerators/' + UUID),
    (['vgpu-pool', '--uuid', UUID], {'name': 'vgpu-pool', 'uuid': UUID},
     ROOT + '/v1/accelerators/' + UUID),
])
def test_unit_create_follows_the_location(argv, body, location):
    (names, values), calls = run(
        units.CreateUnit, argv,
        response(201, None, {'Location': location}),
        response(200, UNIT, {'ETag': ETAG}))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('POST', ROOT + '/v1/accelerators', body),
        ('GET', ROOT + '/v1/accelerators/' + UUID, NO_BODY)]
    assert 'OpenStack-API-Version' not in calls[0].headers
    assert shown(names, values)['uuid'] == UUID


def test_unit_create_without_a_location_is_an_error():
    with pytest.raises(exceptions.CommandError, match='Location'):
        run(units.CreateUnit, ['vgpu-pool'], response(201))


@pytest.mark.parametrize('argv, merged', [
    (['--num', '4'], {'num': 4}),
    (['--remote', '--device-type', 'FPGA'],
     {'remote': 1, 'device_type': 'FPGA'}),
    (['--local', '--capability', '{"memory": "32G", "mig": true}'],
     {'remote': 0, 'acc_capability': {'memory': '32G', 'mig': True}}),
])
def test_unit_set_merges_and_sends_the_etag(argv, merged):
    specs = dict(UNIT['acc_specs'], **merged)
    (names, values), calls = run(
        units.SetUnit, [UUID, *argv],
        response(200, UNIT, {'ETag': ETAG}),
        response(200, unit(acc_specs=specs)))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('GET', ROOT + '/v1/accelerators/' + UUID, NO_BODY),
        ('PUT', ROOT + '/v1/accelerators/%s/acc_specs' % UUID,
         {'acc_specs': specs})]
    assert calls[1].headers['If-Match'] == ETAG
    assert 'OpenStack-API-Version' not in calls[1].headers
    assert shown(names, values)['acc_specs'] == specs


def test_unit_set_says_when_another_client_won():
    with pytest.raises(exceptions.CommandError,
                       match='changed by another client') as caught:
        run(units.SetUnit, [UUID, '--num', '3'],
            response(200, UNIT, {'ETag': ETAG}),
            fault(409, 'ETag does not match'))
    assert 'ETag does not match' in str(caught.value)


def test_unit_set_other_errors_pass_through():
    with pytest.raises(errors.ApiError, match='^num must be positive$'):
        run(units.SetUnit, [UUID, '--num', '3'],
            response(200, UNIT, {'ETag': ETAG}),
            fault(400, 'num must be positive'))


def test_unit_set_needs_something_to_set_and_an_etag():
    with pytest.raises(exceptions.CommandError, match='Nothing to set'):
        run(units.SetUnit, [UUID])
    with pytest.raises(exceptions.CommandError, match='no ETag'):
        run(units.SetUnit, [UUID, '--num', '1'], response(200, UNIT))


@pytest.mark.parametrize('argv', [
    ['--remote', '--local'],
    ['--capability', 'not json'],
    ['--capability', '[1, 2]'],
    ['--num', '-1'],
    ['--num', 'two'],
])
def test_unit_set_rejects_bad_options(argv):
    with pytest.raises(SystemExit):
        run(units.SetUnit, [UUID, *argv])


# --- attachments ------------------------------------------------------------


@pytest.mark.parametrize('command, target, body', [
    (attachments.AttachInstance, INSTANCE, {'instance_uuid': INSTANCE}),
    (attachments.AttachHost, 'cn3', {'host': 'cn3'}),
])
def test_attach(command, target, body):
    (names, values), calls = run(command, [UUID, target],
                                 response(200, UNIT))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('PUT', ROOT + '/v1/accelerators/' + UUID, body)]
    assert 'OpenStack-API-Version' not in calls[0].headers
    assert shown(names, values)['uuid'] == UUID


@pytest.mark.parametrize('command, attachment', [
    (attachments.DetachInstance, UNIT['attachments'][0]),
    (attachments.DetachHost, {'type': 'host', 'host': 'cn1'}),
])
def test_detach(command, attachment):
    result, calls = run(command, [UUID],
                        response(200, unit(attachments=[attachment])),
                        response(204))
    assert result is None
    assert [(c.method, c.url) for c in calls] == [
        ('GET', ROOT + '/v1/accelerators/' + UUID),
        ('DELETE', ROOT + '/v1/accelerators/' + UUID)]


@pytest.mark.parametrize('command, attached, expected', [
    (attachments.DetachInstance, [{'type': 'host', 'host': 'cn1'}],
     'not attached to an instance .it is attached to host cn1.'),
    (attachments.DetachHost, UNIT['attachments'],
     'not attached to a host .it is attached to instance '),
    (attachments.DetachInstance, [], 'attached to nothing'),
])
def test_detach_refuses_the_wrong_kind(command, attached, expected):
    # NOTE(tests): only the GET is canned; a DELETE would fail the fake.
    with pytest.raises(exceptions.CommandError, match=expected):
        run(command, [UUID], response(200, unit(attachments=attached)))


# --- errors -----------------------------------------------------------------


def test_an_error_reads_as_the_faultstring():
    with pytest.raises(errors.ApiError) as caught:
        run(drivers.InstallDriver, ['cn1', 'gpu'],
            fault(409, 'Driver gpu on cn1 failed: install script exited 2'))
    assert isinstance(caught.value, exceptions.CommandError)
    assert str(caught.value) == ('Driver gpu on cn1 failed: install '
                                 'script exited 2')
    assert caught.value.status == 409


@pytest.mark.parametrize('answer, message', [
    (response(404, {'error_message': 'not wrapped twice'}),
     'not wrapped twice'),
    (response(400, {'error_message': {'faultstring': 'a dict'}}), 'a dict'),
    (response(502, '<html>\n <b>Bad   Gateway</b></html>'),
     '<html> <b>Bad Gateway</b></html>'),
    (response(503), 'The accelerator API answered HTTP 503.'),
])
def test_other_error_bodies(answer, message):
    answer.headers['X-OpenStack-Request-Id'] = 'req-1'
    with pytest.raises(errors.ApiError) as caught:
        run(units.ListUnits, [], answer)
    assert str(caught.value) == message
    assert caught.value.request_id == 'req-1'


def test_a_success_that_is_not_json_is_an_error():
    with pytest.raises(exceptions.CommandError, match='not JSON'):
        run(units.ShowUnit, [UUID], response(200, 'OK'))


def test_the_endpoint_is_looked_up_once():
    adapter = fakes.FakeAdapter(response(200, {'accelerator': []}),
                                response(200, {'accelerator': []}))
    client = cli_client.Client(adapter)
    client.list_units()
    adapter.endpoint = 'http://elsewhere.test/v2'
    client.list_units()
    assert {call.url for call in adapter.calls} == {
        ROOT + '/v1/accelerators'}
