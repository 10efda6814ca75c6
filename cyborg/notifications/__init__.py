"""Versioned notifications of Cyborg's lifecycle events (see base.py)."""


def register_all():
    """Import every notification module so the object registry knows each
    class (called by cyborg.objects.register_all)."""
    __import__('cyborg.notifications.arq')
    __import__('cyborg.notifications.device')
    __import__('cyborg.notifications.driver')
    __import__('cyborg.notifications.maintenance')
    __import__('cyborg.notifications.program')
