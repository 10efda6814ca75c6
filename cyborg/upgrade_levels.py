"""What a client may send while [upgrade_levels] pins its peers' versions."""

from oslo_config import cfg
from oslo_utils import versionutils

from cyborg import exception

CONF = cfg.CONF

# NOTE(upgrade): history, never edited: the object versions the conductors
# of each RPC version know, from the version where one of them changed. A
# client pinned to a conductor RPC version sends and asks for these. An
# object change that a conductor can tell apart (a field, a remotable
# method) adds an entry under a new conductor RPC version.
_BASE = {'AttachHandle': '1.0', 'Attribute': '1.0', 'ControlpathID': '1.0',
         'Deployable': '1.0', 'Device': '1.0', 'Service': '1.0'}
_ARQS = {'AcceleratorRequest': '1.0', 'DeviceProfile': '1.0'}
CONDUCTOR_OBJECTS = {
    '1.0': _BASE,
    '1.1': dict(_BASE, Device='1.1', Service='1.1'),
    '1.4': dict(_BASE, Device='1.1', Service='1.1', **_ARQS),
    # Deployable 1.1 and Device 1.2 (list_view), Service 1.2 (rpc_version).
    '1.7': dict(_BASE, Deployable='1.1', Device='1.2', Service='1.2',
                **_ARQS),
    # Accelerator 1.0 (/v1 views; RPC answers still carry plain dicts).
    '1.8': dict(_BASE, Deployable='1.1', Device='1.2', Service='1.2',
                Accelerator='1.0', **_ARQS),
    # Device 1.3 (health fields, health_details), Deployable 1.2
    # (cleaning_since).
    '1.9': dict(_BASE, Deployable='1.2', Device='1.3', Service='1.2',
                Accelerator='1.0', **_ARQS),
    # No object changed; get_limits is new.
    '1.10': dict(_BASE, Deployable='1.2', Device='1.3', Service='1.2',
                 Accelerator='1.0', **_ARQS),
    # No object changed; explain_profile is new.
    '1.11': dict(_BASE, Deployable='1.2', Device='1.3', Service='1.2',
                 Accelerator='1.0', **_ARQS),
    # Device 1.4 (mode, modes); set_device_mode.
    '1.12': dict(_BASE, Deployable='1.2', Device='1.4', Service='1.2',
                 Accelerator='1.0', **_ARQS),
    # Device 1.5 (offer_reason).
    '1.13': dict(_BASE, Deployable='1.2', Device='1.5', Service='1.2',
                 Accelerator='1.0', **_ARQS),
    # Service 1.3 (clock_skew, read_at).
    '1.14': dict(_BASE, Deployable='1.2', Device='1.5', Service='1.3',
                 Accelerator='1.0', **_ARQS),
    # No object changed; create_arqs takes a key.
    '1.15': dict(_BASE, Deployable='1.2', Device='1.5', Service='1.3',
                 Accelerator='1.0', **_ARQS),
}


def _tuple(version):
    return versionutils.convert_version_to_tuple(version)


def version_cap(service, current):
    """The RPC version cap of clients of ``service`` ('conductor' or
    'agent'): its [upgrade_levels] pin, or ``current`` when unset.

    :raises ConfigError: the pin is newer than this release knows.
    """
    pin = getattr(CONF.upgrade_levels, service)
    if not pin:
        return current
    if _tuple(pin) > _tuple(current):
        raise exception.ConfigError(
            option='[upgrade_levels] %s' % service,
            reason='%s is newer than the %s RPC API of this release (%s); '
                   'a pin names the version of an older release'
                   % (pin, service, current))
    return pin


def conductor_objects(cap):
    """The object versions conductors of RPC version ``cap`` know."""
    known = [v for v in CONDUCTOR_OBJECTS if _tuple(v) <= _tuple(cap)]
    return CONDUCTOR_OBJECTS[max(known, key=_tuple)]


def object_pins():
    """The object versions the conductors of the pinned RPC version know,
    or None when [upgrade_levels] conductor pins nothing."""
    pin = CONF.upgrade_levels.conductor
    return conductor_objects(pin) if pin else None


def check(client, service, needed, action):
    """Raise RPCVersionCapped unless ``client`` may send ``needed``."""
    if not client.can_send_version(needed):
        raise exception.RPCVersionCapped(
            action=action, service=service, needed=needed,
            cap=client.version_cap)


def first_conductor_with(objname, version):
    """The first conductor RPC version that knows ``version`` of
    ``objname``."""
    for rpc_version in sorted(CONDUCTOR_OBJECTS, key=_tuple):
        known = CONDUCTOR_OBJECTS[rpc_version].get(objname)
        if known and _tuple(known) >= _tuple(version):
            return rpc_version
    return 'a newer version'


def pinned_version(manifest, objname):
    """The version of ``objname`` that the pinned conductors know.

    :raises RPCVersionCapped: they know no version of that object.
    """
    if objname not in manifest:
        raise exception.RPCVersionCapped(
            action='Sending a %s object' % objname, service='conductor',
            needed=first_conductor_with(objname, '1.0'),
            cap=CONF.upgrade_levels.conductor)
    return manifest[objname]
