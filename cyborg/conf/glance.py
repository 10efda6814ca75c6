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
]


def register_opts(conf):
    utils.register_ksa_opts(conf, GROUP, _DEFAULTS)
    conf.register_opts(_OPTS, group=GROUP)


def list_opts():
    return {GROUP: utils.list_ksa_opts(_DEFAULTS) + _OPTS}
