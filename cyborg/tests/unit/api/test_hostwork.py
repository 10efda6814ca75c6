"""Host-side work of binds and programming: mdevs, and FPGA images."""

import os
import uuid

from oslo_config import cfg
import pytest

from cyborg import context as cyborg_context
from cyborg import states
from cyborg.conf import gpu
from cyborg.db import api as dbapi
from cyborg.tests import arq_rows
from cyborg.tests import fake_services
from cyborg.tests.fixtures import gpu_fpga_hosts as cards
from cyborg.tests.fixtures import mixed_host
from cyborg.tests.fixtures import pci_hosts
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import READER
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.test_arqs import MEMBER
from cyborg.tests.unit.api.test_arqs import NOVA
from cyborg.tests.unit.api.test_arqs import URL
from cyborg.tests.unit.api.test_arqs import _bind_ops
from cyborg.tests.unit.api.test_arqs import _wait_resolved

CONF = cfg.CONF
HOST = mixed_host.NAME
PAC = '0000:86:00.0'


@pytest.fixture
def host(stack, api, override, tmp_path, db):
    """The mixed host's agent (vGPU, PAC with fpgaconf, ...), its devices
    ready, and Glance."""
    root = pci_hosts.copy_host(HOST, tmp_path / 'sys')
    override('sysfs_root', root, group='agent')
    for group, values in mixed_host.AGENT_OPTIONS.items():
        for name, value in values.items():
            if name in ('device_spec', 'enabled_vgpu_types',
                        'device_addresses'):
                value = [value]
            elif name == 'enabled_drivers':
                value = value.split(',')
            override(name, value, group=group)
        if group == 'gpu_devices':
            gpu.register_dynamic_opts(CONF)
    tool, record = cards.fake_tool(tmp_path, 'fpgaconf')
    override('fpgaconf_path', tool, group='fpga')
    with pci_hosts.privsep_in_process(), \
            fake_services.serving(override) as glance:
        agent = stack(HOST)
        agent.report()
        arq_rows.ready(db)
        deployables = dbapi.deployables.list(
            cyborg_context.get_admin_context())
        yield {'root': root, 'glance': glance, 'fpgaconf': record,
               'agent': agent,
               'by_rc': {_rc(d): d for d in deployables},
               'pac': next(d for d in deployables
                           if d.name == '%s_%s' % (HOST, PAC))}


def _rc(deployable):
    return next(a.value for a in deployable.attributes if a.key == 'rc')


def _profile(api, groups):
    name = 'p-%s' % uuid.uuid4().hex[:8]
    api.post_json('/v2/device_profiles', [{'name': name, 'groups': groups}],
                  headers=ADMIN, status=201)
    return name


def _boot(api, profile, rp_uuid):
    """Create and bind an instance's ARQs as Nova does; the resolved ARQs.
    """
    arqs = api.post_json(URL, {'device_profile_name': profile},
                         headers=MEMBER, status=201).json['arqs']
    instance = str(uuid.uuid4())
    api.patch_json(URL, {a['uuid']: _bind_ops(rp_uuid, instance, HOST)
                         for a in arqs}, headers=NOVA, status=202)
    return instance, _wait_resolved(api, instance)


def _read(path):
    with open(path) as handle:
        return handle.read().strip()


def _type_dir(root):
    return os.path.join(root, 'bus', 'pci', 'devices', mixed_host.VGPU_GPU,
                        'mdev_supported_types', 'nvidia-222')


def test_vgpu_bind_creates_the_mdev_and_unbind_removes_it(api, host):
    vgpu = host['by_rc']['VGPU']
    profile = _profile(api, [{'resources:VGPU': '1'}])
    instance, (arq,) = _boot(api, profile, vgpu.rp_uuid)
    assert arq['state'] == states.ARQ_BOUND
    assert arq['attach_handle_type'] == 'MDEV'
    assert arq['attach_handle_info']['asked_type'] == 'nvidia-222'
    assert arq['attach_handle_info']['vgpu_mark'].startswith('nvidia-222_')
    mdev_uuid = arq['attach_handle_uuid']
    assert _read(os.path.join(_type_dir(host['root']), 'create')) == \
        mdev_uuid
    # NOTE(tests): the kernel would now show the mdev under its parent.
    mdev_dir = os.path.join(host['root'], 'bus', 'pci', 'devices',
                            mixed_host.VGPU_GPU, mdev_uuid)
    os.makedirs(mdev_dir)
    with open(os.path.join(mdev_dir, 'remove'), 'w') as out:
        out.write('')
    api.delete(URL + '?instance=' + instance, headers=NOVA, status=204)
    assert _read(os.path.join(mdev_dir, 'remove')) == '1'


def test_vgpu_bind_fails_when_the_type_is_gone(api, host, ctx):
    vgpu = host['by_rc']['VGPU']
    os.unlink(os.path.join(_type_dir(host['root']), 'create'))
    profile = _profile(api, [{'resources:VGPU': '1'}])
    _instance, (arq,) = _boot(api, profile, vgpu.rp_uuid)
    assert arq['state'] == states.ARQ_BIND_FAILED
    assert not any(h.in_use for h in dbapi.attach_handles.list(
        ctx, filters={'deployable_id': vgpu.id}))


def test_fpga_bind_programs_the_bitstream_once(api, host, ctx):
    image = host['glance'].add(data=b'GBS-1')
    pac = host['pac']
    profile = _profile(api, [{'resources:FPGA': '1',
                              'accel:bitstream_id': image}])
    _instance, (arq,) = _boot(api, profile, pac.rp_uuid)
    assert arq['state'] == states.ARQ_BOUND
    argv = cards.recorded_argv(host['fpgaconf'])
    assert argv[:6] == ['--bus', '0x86', '--device', '0x00',
                        '--function', '0x0']
    assert not os.path.exists(argv[6]), 'the downloaded image is removed'
    assert dbapi.deployables.get(ctx, pac.uuid).bitstream_id == image
    os.unlink(host['fpgaconf'])
    # A second instance asking for the image already there: no programming.
    _instance, (again,) = _boot(api, profile, pac.rp_uuid)
    assert again['state'] == states.ARQ_BOUND
    assert not os.path.exists(host['fpgaconf'])


def test_fpga_bind_finds_the_image_by_function(api, host, ctx):
    image = host['glance'].add(**{'accel:function_id': 'gzip'})
    host['glance'].add(**{'accel:function_id': 'other'})
    profile = _profile(api, [{'resources:FPGA': '1',
                              'accel:function_id': 'gzip'}])
    _instance, (arq,) = _boot(api, profile, host['pac'].rp_uuid)
    assert arq['state'] == states.ARQ_BOUND
    assert dbapi.deployables.get(ctx, host['pac'].uuid).bitstream_id == image


def test_fpga_bind_never_reprograms_under_another_instance(api, host):
    first = host['glance'].add()
    second = host['glance'].add()
    pac = host['pac']
    _boot(api, _profile(api, [{'resources:FPGA': '1',
                               'accel:bitstream_id': first}]), pac.rp_uuid)
    os.unlink(host['fpgaconf'])
    _instance, (arq,) = _boot(api, _profile(api, [
        {'resources:FPGA': '1', 'accel:bitstream_id': second}]), pac.rp_uuid)
    assert arq['state'] == states.ARQ_BIND_FAILED
    assert not os.path.exists(host['fpgaconf'])


@pytest.mark.parametrize('group', [
    {'accel:bitstream_id': str(uuid.uuid4())},
    {'accel:function_id': 'nothing-loads-this'},
])
def test_fpga_bind_fails_without_one_image(api, host, ctx, group):
    profile = _profile(api, [dict(group, **{'resources:FPGA': '1'})])
    _instance, (arq,) = _boot(api, profile, host['pac'].rp_uuid)
    assert arq['state'] == states.ARQ_BIND_FAILED
    assert not os.path.exists(host['fpgaconf'])
    assert dbapi.deployables.get(ctx, host['pac'].uuid).bitstream_id is None


def test_fpga_bind_fails_when_several_images_have_the_function(api, host):
    for _ in range(2):
        host['glance'].add(**{'accel:function_id': 'twice'})
    profile = _profile(api, [{'resources:FPGA': '1',
                              'accel:function_id': 'twice'}])
    _instance, (arq,) = _boot(api, profile, host['pac'].rp_uuid)
    assert arq['state'] == states.ARQ_BIND_FAILED
    assert not os.path.exists(host['fpgaconf'])


def _program_body(image):
    return [{'op': 'replace', 'path': '/program',
             'value': [{'image_uuid': image}]}]


def _program_url(deployable_uuid):
    return '/v2/deployables/%s/program' % deployable_uuid


def test_program_api_loads_the_image(api, host):
    image = host['glance'].add()
    resp = api.patch_json(_program_url(host['pac'].uuid),
                          _program_body(image), headers=ADMIN, status=200)
    assert resp.json['uuid'] == host['pac'].uuid
    assert resp.json['bitstream_id'] == image
    assert cards.recorded_argv(host['fpgaconf'])[:2] == ['--bus', '0x86']


def test_program_api_refuses_a_deployable_in_use(api, host, ctx):
    pac = host['pac']
    _boot(api, _profile(api, [{'resources:FPGA': '1'}]), pac.rp_uuid)
    resp = api.patch_json(_program_url(pac.uuid),
                          _program_body(host['glance'].add()),
                          headers=dict(ADMIN, **WITH_CODES), status=409)
    assert code(resp) == 'cyborg.deployable.in_use'
    assert not os.path.exists(host['fpgaconf'])
    assert dbapi.deployables.get(ctx, pac.uuid).bitstream_id is None


def test_program_api_reports_the_tool_failure(api, host, ctx, tmp_path,
                                              override):
    os.makedirs(tmp_path / 'bad')
    tool, _record = cards.fake_tool(tmp_path / 'bad', 'fpgaconf',
                                    exit_code=1, stderr='no suitable slot')
    override('fpgaconf_path', tool, group='fpga')
    resp = api.patch_json(_program_url(host['pac'].uuid),
                          _program_body(host['glance'].add()),
                          headers=dict(ADMIN, **WITH_CODES), status=409)
    assert code(resp) == 'cyborg.deployable.programming_failed'
    assert 'no suitable slot' in fault(resp)['faultstring']
    assert dbapi.deployables.get(ctx, host['pac'].uuid).bitstream_id is None


def test_program_api_refuses_what_cannot_be_programmed(api, host):
    gpu_dep = host['by_rc']['PGPU']
    resp = api.patch_json(_program_url(gpu_dep.uuid),
                          _program_body(host['glance'].add()),
                          headers=dict(ADMIN, **WITH_CODES), status=400)
    assert code(resp) == 'cyborg.driver.not_supported'


@pytest.mark.parametrize('body', [
    [],
    {},
    [{'op': 'add', 'path': '/program', 'value': [{'image_uuid': 'x'}]}],
    [{'op': 'replace', 'path': '/name', 'value': [{'image_uuid': 'x'}]}],
    [{'op': 'replace', 'path': '/program', 'value': []}],
    [{'op': 'replace', 'path': '/program', 'value': [{'image': 'x'}]}],
    [{'op': 'replace', 'path': '/program',
      'value': [{'image_uuid': 'not-a-uuid'}]}],
    [{'op': 'replace', 'path': '/program', 'value': [{'image_uuid': 7}]}],
])
def test_program_api_bad_bodies_are_400(api, host, body):
    api.patch_json(_program_url(host['pac'].uuid), body, headers=ADMIN,
                   status=400)
    assert not os.path.exists(host['fpgaconf'])


def test_program_api_refuses_an_inactive_image(api, host):
    image = host['glance'].add(status='queued')
    resp = api.patch_json(_program_url(host['pac'].uuid),
                          _program_body(image),
                          headers=dict(ADMIN, **WITH_CODES), status=400)
    assert code(resp) == 'cyborg.image.not_usable'


def test_program_api_missing_things(api, host):
    body = _program_body(str(uuid.uuid4()))
    api.patch_json(_program_url(host['pac'].uuid), body, headers=ADMIN,
                   status=400)
    api.patch_json(_program_url(uuid.uuid4()),
                   _program_body(host['glance'].add()), headers=ADMIN,
                   status=404)
    api.patch_json(_program_url('nope'), body, headers=ADMIN, status=404)
    api.patch_json('/v2/deployables/%s/other' % host['pac'].uuid, body,
                   headers=ADMIN, status=404)
    api.patch_json(_program_url(host['pac'].uuid), body, headers=READER,
                   status=403)
