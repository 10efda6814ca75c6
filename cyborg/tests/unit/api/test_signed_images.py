"""Signed FPGA images through the API, the conductor and an agent."""

import os

import pytest

from cyborg import states
from cyborg.db import api as dbapi
from cyborg.tests import signing
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import WITH_CODES
from cyborg.tests.unit.api.conftest import code
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.test_hostwork import HOST
from cyborg.tests.unit.api.test_hostwork import _boot
from cyborg.tests.unit.api.test_hostwork import _profile
from cyborg.tests.unit.api.test_hostwork import _program_body
from cyborg.tests.unit.api.test_hostwork import _program_url
from cyborg.tests.unit.api.test_hostwork import host  # noqa: F401

DATA = b'GBS-signed' * 1000


@pytest.fixture(scope='module')
def signer(tmp_path_factory):
    return signing.Signer(tmp_path_factory.mktemp('certificates'))


@pytest.fixture
def verifying(host, override, signer):  # noqa: F811
    override('backend', 'cyborg_local', group='key_manager')
    override('certificate_dir', signer.directory, group='key_manager')
    override('verify_image_signatures', True, group='glance')
    return host


def test_a_bind_loads_a_signed_image(api, verifying, signer, ctx):
    image = verifying['glance'].add(data=DATA, **signer.properties(DATA))
    pac = verifying['pac']
    profile = _profile(api, [{'resources:FPGA': '1',
                              'accel:bitstream_id': image}])
    _instance, (arq,) = _boot(api, profile, pac.rp_uuid)
    assert arq['state'] == states.ARQ_BOUND
    assert os.path.exists(verifying['fpgaconf'])
    assert dbapi.deployables.get(ctx, pac.uuid).bitstream_id == image


def test_a_bind_of_a_tampered_image_fails_before_the_tool(api, verifying,
                                                          signer, ctx):
    image = verifying['glance'].add(data=signing.tampered(DATA),
                                    **signer.properties(DATA))
    pac = verifying['pac']
    profile = _profile(api, [{'resources:FPGA': '1',
                              'accel:bitstream_id': image}])
    _instance, (arq,) = _boot(api, profile, pac.rp_uuid)
    assert arq['state'] == states.ARQ_BIND_FAILED
    assert not os.path.exists(verifying['fpgaconf']), 'fpgaconf never ran'
    assert dbapi.deployables.get(ctx, pac.uuid).bitstream_id is None


def test_program_refuses_a_wrong_hash_method(api, verifying, signer, ctx):
    image = verifying['glance'].add(data=DATA, **signer.properties(
        DATA, hash_method='MD5'))
    resp = api.patch_json(_program_url(verifying['pac'].uuid),
                          _program_body(image), headers=ADMIN, status=409)
    message = fault(resp)['faultstring']
    assert 'Image %s is refused' % image in message
    assert 'Invalid signature hash method: MD5' in message
    assert not os.path.exists(verifying['fpgaconf'])
    assert dbapi.deployables.get(
        ctx, verifying['pac'].uuid).bitstream_id is None


def test_program_refuses_an_unsigned_image_only_when_on(api, host,  # noqa: F811
                                                         override):
    image = host['glance'].add(data=DATA)
    override('verify_image_signatures', True, group='glance')
    resp = api.patch_json(_program_url(host['pac'].uuid), _program_body(image),
                          headers=dict(ADMIN, **WITH_CODES), status=409)
    assert code(resp) == 'cyborg.deployable.programming_failed'
    assert 'it is not signed' in fault(resp)['faultstring']
    assert not os.path.exists(host['fpgaconf'])
    override('verify_image_signatures', False, group='glance')
    api.patch_json(_program_url(host['pac'].uuid), _program_body(image),
                   headers=ADMIN, status=200)
    assert os.path.exists(host['fpgaconf'])


def test_driver_update_refuses_a_tampered_image_as_400(api, verifying,
                                                       signer):
    image = verifying['glance'].add(data=signing.tampered(DATA),
                                    **signer.properties(DATA))
    resp = api.patch_json('/v2/drivers/%s/intel_fpga_driver' % HOST,
                          {'image_uuid': image},
                          headers=dict(ADMIN, **WITH_CODES), status=400)
    assert code(resp) == 'cyborg.image.signature_invalid'
    assert not os.path.exists(verifying['fpgaconf'])
