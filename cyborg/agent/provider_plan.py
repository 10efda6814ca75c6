"""The providers and inventories Placement should hold for this host."""

from cyborg.common import decisions
from cyborg.drivers import report


def wanted_providers(devices, statuses, extra_traits=None, taken=None,
                     decided=None):
    """What Placement should hold for the devices found on this host.

    :param devices: device key -> device primitive (as the report cache).
    :param decided: device key -> {deployable name: the conductor's
        decision for its provider (``reserved``, ``traits``)}: written as
        it is.
    :param statuses, extra_traits, taken: device key -> status, operators'
        traits per deployable and deployables attached through /v1, as a
        conductor older than its decisions answers; the decision of a
        provider it did not make is taken from these, by the conductor's
        rules.
    :returns: provider uuid -> ``Wanted``
    """
    wanted = {}
    decided = decided or {}
    for key, device in devices.items():
        fault = device.get('fault')
        for dep in device.get('deployables', ()):
            decision = (decided.get(key) or {}).get(dep['name']) or \
                _fallback(key, device, dep, statuses, extra_traits, taken)
            # NOTE(placement): a fault the driver reports now reserves at
            # once, also while the conductor is away; the conductor makes
            # the device error at the next report, so this only ever
            # reserves what the conductor will.
            item = Wanted(name=dep['name'], device=key,
                          resource_class=dep['resource_class'],
                          total=int(dep['num_accelerators']),
                          reserve=bool(decision['reserved'] or fault),
                          traits=frozenset(decision['traits']))
            wanted[item.uuid] = item
    return wanted


def _fallback(key, device, dep, statuses, extra_traits, taken):
    """The decision a conductor older than its decisions leaves to the
    agent (or one of a device it has not answered for yet)."""
    return decisions.provider(
        (statuses or {}).get(key), services=device.get('services', ()),
        driver_traits=dep.get('traits', ()),
        operator_traits=((extra_traits or {}).get(key) or {}).get(
            dep['name'], ()),
        attached=dep['name'] in ((taken or {}).get(key) or ()))


class Wanted:
    """One provider as the hardware and the device status want it."""

    __slots__ = ('name', 'uuid', 'device', 'resource_class', 'total',
                 'reserve', 'traits')

    def __init__(self, name, device, resource_class, total, reserve, traits):
        self.name = name
        self.uuid = report.provider_uuid(name)
        self.device = device
        self.resource_class = resource_class
        self.total = total
        self.reserve = reserve
        self.traits = traits


def _inventory(total, reserved):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


def inventories(item, used=None):
    """The inventories of a wanted provider, never below what is used.

    A device that now offers fewer units than are allocated keeps the
    allocated amount, with the difference reserved so that nothing more is
    scheduled; a resource class it no longer offers stays, fully reserved,
    while anything is allocated from it.
    """
    used = used or {}
    result = {}
    keep = max(item.total, used.get(item.resource_class, 0))
    if keep > 0:
        result[item.resource_class] = _inventory(
            keep, keep if item.reserve else keep - item.total)
    for rc, amount in used.items():
        if rc != item.resource_class and amount > 0:
            result[rc] = _inventory(amount, amount)
    return result


def fully_reserved(current, used):
    """The inventories of a provider whose device is gone: every unit
    reserved, never fewer than are used."""
    result = {}
    for rc, inv in current.items():
        total = max(inv['total'], used.get(rc, 0))
        result[rc] = _inventory(total, total)
    return result
