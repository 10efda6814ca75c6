"""A read-only castellan backend serving X.509 certificates from PEM files."""

import os

from castellan.common import exception as castellan_exception
from castellan.common.objects import x_509
from castellan.key_manager import key_manager
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg.conf import key_manager as key_manager_conf

LOG = logging.getLogger(__name__)


class LocalCertificateManager(key_manager.KeyManager):
    """Certificates named ``<uuid>.pem`` in ``[key_manager]
    certificate_dir``; nothing else, and nothing is ever written.

    The context is ignored: whoever can read the agent's configuration
    directory placed these files, so every caller may read them all.
    """

    def __init__(self, configuration=None):
        self.conf = configuration or cfg.CONF
        key_manager_conf.register_opts(self.conf)

    @property
    def directory(self):
        return self.conf.key_manager.certificate_dir

    def _path(self, managed_object_id):
        # NOTE(key_manager): only a uuid can name a file: an id from an
        # image property must never reach outside the directory.
        if not uuidutils.is_uuid_like(managed_object_id):
            raise castellan_exception.ManagedObjectNotFoundError(
                uuid=managed_object_id)
        return os.path.join(self.directory, '%s.pem' % managed_object_id)

    def get(self, context, managed_object_id, metadata_only=False):
        """The certificate ``<managed_object_id>.pem``, as castellan's
        X509 (DER inside, as castellan's backends return it).

        :raises ManagedObjectNotFoundError: no such file.
        :raises KeyManagerError: the file is unreadable or not a PEM
            certificate.
        """
        path = self._path(managed_object_id)
        try:
            with open(path, 'rb') as handle:
                pem = handle.read()
        except FileNotFoundError:
            raise castellan_exception.ManagedObjectNotFoundError(
                uuid=managed_object_id) from None
        except OSError as exc:
            raise castellan_exception.KeyManagerError(
                reason='cannot read %s: %s' % (path, exc)) from exc
        try:
            certificate = x509.load_pem_x509_certificate(pem)
        except ValueError as exc:
            LOG.error('%s is not a PEM X.509 certificate: %s', path, exc)
            raise castellan_exception.KeyManagerError(
                reason='%s is not a PEM X.509 certificate' % path) from exc
        der = certificate.public_bytes(serialization.Encoding.DER)
        return x_509.X509(None if metadata_only else der,
                          name=managed_object_id, id=managed_object_id)

    def list(self, context, object_type=None, metadata_only=False):
        if object_type not in (None, x_509.X509):
            return []
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            stem, ext = os.path.splitext(name)
            if ext == '.pem' and uuidutils.is_uuid_like(stem):
                try:
                    found.append(self.get(context, stem, metadata_only))
                except castellan_exception.CastellanException:
                    continue
        return found

    def _read_only(self, *args, **kwargs):
        raise castellan_exception.KeyManagerError(
            reason='the %s key manager is read-only: place certificates '
                   'in %s as <uuid>.pem files' %
                   (key_manager_conf.LOCAL_BACKEND, self.directory))

    create_key = _read_only
    create_key_pair = _read_only
    store = _read_only
    delete = _read_only
    add_consumer = _read_only
    remove_consumer = _read_only
