"""Checking a Glance image's signature (cursive) before a device loads it."""

from cryptography import exceptions as crypto_exceptions
from cursive import certificate_utils
from cursive import exception as cursive_exception
from cursive import signature_utils
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: The image properties of a signed image (Glance's names).
PROPERTIES = (signature_utils.SIGNATURE, signature_utils.HASH_METHOD,
              signature_utils.KEY_TYPE, signature_utils.CERT_UUID)


def enabled():
    return CONF.glance.verify_image_signatures


def _reason(exc):
    """Cursive's reason alone, without its 'verification failed' prefix
    (our own message already says so)."""
    return str(exc.kwargs.get('reason') or exc).rstrip('.')


class Verifier:
    """Fed the image data chunk by chunk; ``verify`` once all went by."""

    def __init__(self, image_id, verifier):
        self.image_id = image_id
        self._verifier = verifier

    def update(self, chunk):
        self._verifier.update(chunk)

    def verify(self):
        """:raises ImageSignatureInvalid: the data is not what was signed.
        """
        try:
            self._verifier.verify()
        except crypto_exceptions.InvalidSignature:
            raise exception.ImageSignatureInvalid(
                image=self.image_id,
                reason='its data does not match img_signature') from None
        LOG.info('The signature of image %s verifies', self.image_id)


def verifier(context, image):
    """A ``Verifier`` for the data of ``image`` (its Glance record).

    :raises ImageSignatureInvalid: the image is unsigned, names a
        certificate the key manager does not have (or one outside
        ``[glance] trusted_certificate_ids``), or a hash method or key type
        cursive does not know.
    """
    image_id = image.get('id')
    missing = [name for name in PROPERTIES if not image.get(name)]
    if missing:
        raise exception.ImageSignatureInvalid(
            image=image_id, reason='it is not signed (no %s), and [glance] '
            'verify_image_signatures is on' % ', '.join(missing))
    certificate = image[signature_utils.CERT_UUID]
    try:
        if CONF.glance.trusted_certificate_ids:
            certificate_utils.verify_certificate(
                context, certificate, CONF.glance.trusted_certificate_ids)
        found = signature_utils.get_verifier(
            context, certificate, image[signature_utils.HASH_METHOD],
            image[signature_utils.SIGNATURE],
            image[signature_utils.KEY_TYPE])
    except cursive_exception.SignatureVerificationError as exc:
        raise exception.ImageSignatureInvalid(
            image=image_id, reason=_reason(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - refuse rather than load
        # NOTE(image_signature): a key manager that cannot be loaded or
        # reached must not let an image through unchecked.
        LOG.exception('Cannot check the signature of image %s', image_id)
        raise exception.ImageSignatureInvalid(
            image=image_id, reason='certificate %s could not be fetched: %s'
            % (certificate, exc)) from exc
    return Verifier(image_id, found)
