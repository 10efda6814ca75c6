"""Versioned objects: the only way the API and the agents read and write data.
"""


def register_all():
    """Import every object module so the registry knows each class."""
    # NOTE(objects): imported here, not at package import, so that importing
    # cyborg.objects.base alone has no side effects.
    __import__('cyborg.objects.accelerator')
    __import__('cyborg.objects.arq')
    __import__('cyborg.objects.attach_handle')
    __import__('cyborg.objects.attribute')
    __import__('cyborg.objects.control_path')
    __import__('cyborg.objects.deployable')
    __import__('cyborg.objects.device')
    __import__('cyborg.objects.device_profile')
    __import__('cyborg.objects.service')
    # NOTE(objects): notification payloads share this registry, so that
    # the fingerprint test covers them too.
    __import__('cyborg.notifications').notifications.register_all()
