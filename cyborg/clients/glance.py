"""The one Glance client: bitstream images for FPGA programming."""

import os
import tempfile

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.clients import adapter as ksa_adapter
from cyborg.clients import image_signature

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: The image property that says which FPGA function a bitstream loads.
FUNCTION_PROPERTY = 'accel:function_id'


class GlanceClient:
    """Looks up and downloads images through Glance's v2 API."""

    def __init__(self, adapter=None):
        self._adapter = adapter

    @property
    def adapter(self):
        if self._adapter is None:
            self._adapter = ksa_adapter.from_conf('glance')
        return self._adapter

    def _get(self, image, path, **kwargs):
        if self._adapter is None and not CONF.glance.auth_type:
            raise exception.ImageUnavailable(
                image=image, reason='Glance is not configured here '
                                    '([glance] auth_type is not set)')
        try:
            response = self.adapter.get(path, raise_exc=False, **kwargs)
        except ks_exc.ClientException as exc:
            raise exception.ImageUnavailable(image=image,
                                             reason=str(exc)) from exc
        if response.status_code == 404:
            raise exception.ImageNotFound(image=image)
        if response.status_code != 200:
            raise exception.ImageUnavailable(
                image=image, reason='Glance answered %d' %
                response.status_code)
        return response

    def image(self, image_id):
        """The image record (a dict) of an active image.

        :raises ImageNotFound, ImageUnavailable:
        """
        found = self._get(image_id, '/v2/images/%s' % image_id).json()
        if found.get('status') != 'active':
            raise exception.ImageNotUsable(
                image=image_id, reason='it is %s, not active' %
                found.get('status'))
        return found

    def image_for_function(self, function_id):
        """The one active image whose accel:function_id is ``function_id``.

        :raises ImageNotFound: none matches.
        :raises AmbiguousImage: several match.
        """
        what = '%s=%s' % (FUNCTION_PROPERTY, function_id)
        found = self._get(what, '/v2/images', params={
            FUNCTION_PROPERTY: function_id, 'status': 'active'}
        ).json().get('images', [])
        if not found:
            raise exception.ImageNotFound(image='with ' + what)
        if len(found) > 1:
            raise exception.AmbiguousImage(count=len(found),
                                           prop=FUNCTION_PROPERTY,
                                           value=function_id)
        return found[0]

    def download(self, image_id, directory, context=None):
        """Write the image's data to a new file in ``directory``.

        With ``[glance] verify_image_signatures``, the file is returned
        only once the signature verified over the whole data: every image
        a device loads comes through here, so nothing reaches a device
        unchecked.

        :param context: the request context the key manager is asked with.
        :returns: the file's path; the caller removes it.
        :raises ImageSignatureInvalid: no file is left behind.
        """
        checker = None
        if image_signature.enabled():
            checker = image_signature.verifier(context, self.image(image_id))
        response = self._get(image_id, '/v2/images/%s/file' % image_id,
                             stream=True)
        fd, path = tempfile.mkstemp(prefix='image-%s-' % image_id,
                                    dir=directory)
        try:
            with os.fdopen(fd, 'wb') as out:
                for chunk in response.iter_content(
                        CONF.glance.download_chunk_size):
                    out.write(chunk)
                    if checker is not None:
                        checker.update(chunk)
            if checker is not None:
                checker.verify()
        except Exception:
            os.unlink(path)
            raise
        LOG.info('Downloaded image %s (%d bytes)', image_id,
                 os.path.getsize(path))
        return path
