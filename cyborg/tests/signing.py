"""A test CA and signing certificate, and Glance-style image signatures."""

import base64
import datetime
import os
import uuid

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

_HASHES = {'SHA-256': hashes.SHA256(), 'SHA-384': hashes.SHA384(),
           'SHA-512': hashes.SHA512(), 'SHA-224': hashes.SHA224()}


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, public_key, issuer, issuer_key, ca):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject))
               .issuer_name(_name(issuer))
               .public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                              critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=not ca, content_commitment=False,
                   key_encipherment=False, data_encipherment=False,
                   key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                   encipher_only=False, decipher_only=False), critical=True))
    return builder.sign(issuer_key, hashes.SHA256())


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Signer:
    """A CA and a certificate it issued for signing images; both written
    to ``directory`` as ``<uuid>.pem``, as the cyborg_local key manager
    reads them (``ca_id`` and ``cert_id`` are their ids)."""

    def __init__(self, directory):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        ca_key = _key()
        ca = _certificate('Cyborg test CA', ca_key.public_key(),
                          'Cyborg test CA', ca_key, ca=True)
        self._key = _key()
        signing = _certificate('Cyborg image signer', self._key.public_key(),
                               'Cyborg test CA', ca_key, ca=False)
        self.ca_id = self.write(ca)
        self.cert_id = self.write(signing)

    def write(self, certificate):
        """Store ``certificate`` under a new uuid; the uuid."""
        cert_id = str(uuid.uuid4())
        with open(os.path.join(self.directory, cert_id + '.pem'),
                  'wb') as out:
            out.write(certificate.public_bytes(serialization.Encoding.PEM))
        return cert_id

    def self_signed(self):
        """The id of a stored self-signed signing certificate, with the
        same key, that the CA did not issue."""
        return self.write(_certificate(
            'Rogue signer', self._key.public_key(), 'Rogue signer',
            self._key, ca=False))

    def sign(self, data, hash_method='SHA-256'):
        """base64 of the RSA-PSS signature of ``data``, as in Glance."""
        algorithm = _HASHES[hash_method]
        signature = self._key.sign(
            data, padding.PSS(mgf=padding.MGF1(algorithm),
                              salt_length=padding.PSS.MAX_LENGTH),
            algorithm)
        return base64.b64encode(signature).decode()

    def properties(self, data, hash_method='SHA-256', cert_id=None):
        """The image properties of ``data`` signed with this signer."""
        return {'img_signature': self.sign(data, hash_method
                                           if hash_method in _HASHES
                                           else 'SHA-256'),
                'img_signature_hash_method': hash_method,
                'img_signature_key_type': 'RSA-PSS',
                'img_signature_certificate_uuid': cert_id or self.cert_id}


def tampered(data):
    """``data`` with its first byte changed."""
    return bytes([data[0] ^ 0xFF]) + data[1:]
