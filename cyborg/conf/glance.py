"""Options of the [glance] group: where FPGA bitstream images come from."""

from oslo_config import cfg

from cyborg.conf import utils

GROUP = cfg.OptGroup(
    'glance', title='Glance image API',
    help='Conductors look up the image a device profile names '
         '(accel:bitstream_id, or accel:function_id as an image property) '
         'and agents download it to program an FPGA, with these '
         'credentials (keystoneauth1 session, auth and adapter options).')

_DEFAULTS = {'service_type': 'image',
             'valid_interfaces': ['internal', 'public']}

_OPTS = [
    cfg.IntOpt('download_chunk_size', default=1 << 20, min=4096,
               help='Bytes read at a time when an agent downloads an '
                    'image to program a device.'),
    cfg.BoolOpt('verify_image_signatures', default=False,
                help='Agents load an image only if its signature verifies: '
                     'the image needs the properties img_signature, '
                     'img_signature_hash_method, img_signature_key_type and '
                     'img_signature_certificate_uuid, the certificate is '
                     'fetched from the [key_manager] backend, and the '
                     'whole image data is checked before the device is '
                     'touched. An unsigned image, an unknown certificate '
                     'or a wrong signature fails the program, driver '
                     'update or bind. Off: images are loaded unchecked.'),
    cfg.ListOpt('trusted_certificate_ids', default=[],
                help='With verify_image_signatures, the key manager ids of '
                     'the certificates (CAs) an image\'s signing '
                     'certificate must chain to; empty: any certificate '
                     'the key manager holds is trusted.'),
]


def register_opts(conf):
    utils.register_ksa_opts(conf, GROUP, _DEFAULTS)
    conf.register_opts(_OPTS, group=GROUP)


def list_opts():
    return {GROUP: utils.list_ksa_opts(_DEFAULTS) + _OPTS}
