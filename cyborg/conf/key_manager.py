"""Options of the [key_manager] group: where signing certificates come from."""

from castellan import key_manager as castellan_key_manager
from oslo_config import cfg

#: The stevedore name (``castellan.drivers``) of cyborg's own backend.
LOCAL_BACKEND = 'cyborg_local'

GROUP = cfg.OptGroup(
    'key_manager', title='Key manager (castellan)',
    help='When [glance] verify_image_signatures is on, agents fetch the '
         'certificate named by an image\'s img_signature_certificate_uuid '
         'through castellan. Its backend option picks the key manager: '
         '"barbican" (castellan\'s default) in production, or "%s", a '
         'read-only store of PEM files in certificate_dir.' % LOCAL_BACKEND)

opts = [
    cfg.StrOpt(
        'certificate_dir',
        default='$state_path/certificates',
        help='Directory of the "%s" backend: each X.509 certificate is a '
             'PEM file named <uuid>.pem, the uuid being what images give '
             'as img_signature_certificate_uuid (and [glance] '
             'trusted_certificate_ids). Only read, never written: place '
             'the files there with your configuration management. Other '
             'backends ignore it.' % LOCAL_BACKEND),
]


def register_opts(conf):
    conf.register_group(GROUP)
    # NOTE(conf): castellan registers its own [key_manager] backend option
    # only when a key manager is first loaded; registering it now lets
    # cyborg-all-in-one change its default before the configuration is
    # read (the very same option object, so no duplicate).
    conf.register_opts(castellan_key_manager.key_manager_opts, group=GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    # NOTE(conf): castellan's own options are listed by its
    # castellan.config namespace, not here.
    return {GROUP: opts}
