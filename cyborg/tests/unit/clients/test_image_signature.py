"""Signed Glance images: the agent's download verifies them (cursive)."""

import os
import uuid

from castellan import key_manager
from castellan.common import exception as castellan_exception
from castellan.common.objects import x_509
from cryptography import x509
import pytest

from cyborg import exception
from cyborg import local_key_manager
from cyborg.api import errors
from cyborg.clients import glance as glance_client
from cyborg.tests import fake_services
from cyborg.tests import signing

DATA = b'GBS' + bytes(range(256)) * 64


@pytest.fixture(scope='module')
def signer(tmp_path_factory):
    return signing.Signer(tmp_path_factory.mktemp('certificates'))


@pytest.fixture
def verifying(override, signer):
    """[glance] verify_image_signatures on, with the local key manager."""
    override('backend', 'cyborg_local', group='key_manager')
    override('certificate_dir', signer.directory, group='key_manager')
    override('verify_image_signatures', True, group='glance')
    return override


@pytest.fixture
def glance(override):
    with fake_services.serving(override) as served:
        yield served


def _download(glance_server, image_id, directory):
    return glance_client.GlanceClient().download(image_id, str(directory))


def _refused(glance_server, image_id, directory):
    with pytest.raises(exception.ImageSignatureInvalid) as caught:
        _download(glance_server, image_id, directory)
    # NOTE(tests): nothing is left for a driver to load.
    assert os.listdir(directory) == []
    assert image_id in str(caught.value)
    return str(caught.value)


def test_a_good_signature_passes(verifying, glance, signer, tmp_path):
    image = glance.add(data=DATA, **signer.properties(DATA))
    path = _download(glance, image, tmp_path)
    with open(path, 'rb') as handle:
        assert handle.read() == DATA


def test_every_chunk_is_checked(verifying, glance, signer, tmp_path):
    verifying('download_chunk_size', 4096, group='glance')
    image = glance.add(data=DATA, **signer.properties(DATA))
    assert os.path.getsize(_download(glance, image, tmp_path)) == len(DATA)
    tampered = DATA[:-1] + b'\x00'
    bad = glance.add(data=tampered, **signer.properties(DATA))
    refused_in = tmp_path / 'refused'
    refused_in.mkdir()
    assert 'does not match img_signature' in _refused(glance, bad,
                                                      refused_in)


def test_one_tampered_byte_is_refused(verifying, glance, signer, tmp_path):
    image = glance.add(data=signing.tampered(DATA),
                       **signer.properties(DATA))
    message = _refused(glance, image, tmp_path)
    assert message == ('Image %s is refused by signature verification: its '
                       'data does not match img_signature.' % image)


def test_unsigned_is_refused_when_on(verifying, glance, tmp_path):
    image = glance.add(data=DATA)
    message = _refused(glance, image, tmp_path)
    assert 'it is not signed' in message
    assert 'img_signature_certificate_uuid' in message
    # NOTE(tests): refused from the record alone: the data never came.
    assert ('/v2/images/%s/file' % image, {}) not in glance.requests


def test_partly_signed_is_refused(verifying, glance, signer, tmp_path):
    properties = signer.properties(DATA)
    del properties['img_signature_key_type']
    image = glance.add(data=DATA, **properties)
    assert '(no img_signature_key_type)' in _refused(glance, image, tmp_path)


def test_unsigned_is_accepted_when_off(glance, tmp_path):
    image = glance.add(data=DATA)
    assert os.path.getsize(_download(glance, image, tmp_path)) == len(DATA)
    # Off, the download is what it always was: the data, no record.
    assert [path for path, _query in glance.requests] == [
        '/v2/images/%s/file' % image]


def test_off_loads_even_a_tampered_signed_image(glance, signer, tmp_path):
    image = glance.add(data=signing.tampered(DATA),
                       **signer.properties(DATA))
    assert _download(glance, image, tmp_path)


def test_an_unknown_certificate_is_refused(verifying, glance, signer,
                                           tmp_path):
    unknown = str(uuid.uuid4())
    image = glance.add(data=DATA, **signer.properties(DATA,
                                                      cert_id=unknown))
    message = _refused(glance, image, tmp_path)
    assert 'Certificate not found with ID: %s' % unknown in message


def test_a_certificate_id_cannot_name_another_file(verifying, glance,
                                                   signer, tmp_path):
    sneaky = os.path.join('..', os.path.basename(signer.directory),
                          signer.cert_id)
    image = glance.add(data=DATA, **signer.properties(DATA, cert_id=sneaky))
    assert 'Certificate not found' in _refused(glance, image, tmp_path)


@pytest.mark.parametrize('hash_method', ['MD5', 'SHA-1', 'sha256'])
def test_a_wrong_hash_method_is_refused_as_4xx(verifying, glance, signer,
                                               tmp_path, hash_method):
    image = glance.add(data=DATA, **signer.properties(DATA, hash_method))
    assert 'Invalid signature hash method: %s' % hash_method in _refused(
        glance, image, tmp_path)
    error = exception.ImageSignatureInvalid(image=image, reason='x')
    assert errors.status_for(error) == 400


def test_a_signature_by_another_hash_is_refused(verifying, glance, signer,
                                                tmp_path):
    properties = signer.properties(DATA)
    properties['img_signature'] = signer.sign(DATA, 'SHA-512')
    image = glance.add(data=DATA, **properties)
    assert 'does not match' in _refused(glance, image, tmp_path)


def test_a_wrong_key_type_is_refused(verifying, glance, signer, tmp_path):
    properties = dict(signer.properties(DATA),
                      img_signature_key_type='DSA')
    image = glance.add(data=DATA, **properties)
    assert 'Invalid public key type' in _refused(glance, image, tmp_path)


def test_trusted_certificates_are_enforced(verifying, glance, signer,
                                           tmp_path):
    verifying('trusted_certificate_ids', [signer.ca_id], group='glance')
    good = glance.add(data=DATA, **signer.properties(DATA))
    assert _download(glance, good, tmp_path)
    os.unlink(os.path.join(tmp_path, os.listdir(tmp_path)[0]))
    rogue = glance.add(data=DATA, **signer.properties(
        DATA, cert_id=signer.self_signed()))
    message = _refused(glance, rogue, tmp_path)
    assert 'Certificate chain building failed' in message


def test_a_broken_key_manager_refuses(verifying, glance, signer, tmp_path):
    verifying('backend', 'no.such.KeyManager', group='key_manager')
    image = glance.add(data=DATA, **signer.properties(DATA))
    assert 'could not be fetched' in _refused(glance, image, tmp_path)


# --- The local key manager. ------------------------------------------------

def test_castellan_loads_the_local_backend(verifying, signer):
    manager = key_manager.API()
    assert isinstance(manager, local_key_manager.LocalCertificateManager)
    found = manager.get(None, signer.cert_id)
    assert isinstance(found, x_509.X509)
    assert found.id == signer.cert_id
    certificate = x509.load_der_x509_certificate(found.get_encoded())
    assert 'Cyborg image signer' in certificate.subject.rfc4514_string()


def test_the_local_backend_is_read_only(verifying, signer):
    manager = key_manager.API()
    certificate = manager.get(None, signer.cert_id)
    for call, args in ((manager.store, (None, certificate)),
                       (manager.delete, (None, signer.cert_id)),
                       (manager.create_key, (None, 'AES', 256)),
                       (manager.create_key_pair, (None, 'RSA', 2048)),
                       (manager.add_consumer, (None, signer.cert_id, {})),
                       (manager.remove_consumer, (None, signer.cert_id,
                                                  {}))):
        with pytest.raises(castellan_exception.KeyManagerError,
                           match='read-only'):
            call(*args)
    assert os.path.exists(os.path.join(signer.directory,
                                       signer.cert_id + '.pem'))


def test_the_local_backend_lists_and_refuses_garbage(verifying, signer,
                                                     tmp_path):
    verifying('certificate_dir', str(tmp_path), group='key_manager')
    manager = key_manager.API()
    assert manager.list(None) == []
    garbage = str(uuid.uuid4())
    (tmp_path / (garbage + '.pem')).write_text('not a certificate')
    (tmp_path / 'notes.txt').write_text('ignored')
    with pytest.raises(castellan_exception.KeyManagerError,
                       match='not a PEM X.509 certificate'):
        manager.get(None, garbage)
    with pytest.raises(castellan_exception.ManagedObjectNotFoundError):
        manager.get(None, str(uuid.uuid4()))
    verifying('certificate_dir', signer.directory, group='key_manager')
    listed = {c.id for c in key_manager.API().list(None)}
    assert {signer.ca_id, signer.cert_id} <= listed
    assert key_manager.API().get(None, signer.ca_id,
                                 metadata_only=True).get_encoded() is None
