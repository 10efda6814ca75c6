"""What Placement holds of a device: the rules agent and conductor share."""

import re

import os_traits

from cyborg import states

SERVICE_TRAIT_PREFIX = 'CUSTOM_CYBORG_SERVICE_'
_NOT_TRAIT = re.compile(r'[^A-Z0-9_]')
_MAX_TRAIT = 255


def service_trait(service):
    """The trait that advertises a service a device offers."""
    name = SERVICE_TRAIT_PREFIX + _NOT_TRAIT.sub('_', service.upper())
    return name[:_MAX_TRAIT]


def device_reserved(status, fault=None):
    """Whether the scheduler must leave all of a device alone: whatever
    refuses binds (``states.refuses_binds``: anything but ready, and a
    device the driver calls unhealthy)."""
    return states.refuses_binds(
        status, states.HEALTH_FAILED if fault else None) is not None


def in_use(handles_in_use=(), attached=False, held=False):
    """Whether a deployable is in use: a handle is bound to an instance,
    it is attached through /v1 accelerators, or Placement still holds
    allocations on it (``held``, what the agent read)."""
    return bool(held or attached or any(handles_in_use))


def traits(services=(), driver_traits=(), operator_traits=()):
    """A deployable's provider traits: Cyborg's own, one per service of
    its device, those its driver reports and those operators added."""
    found = {os_traits.OWNER_CYBORG}
    found.update(service_trait(s) for s in services)
    found.update(driver_traits)
    found.update(operator_traits)
    return sorted(found)


def provider(status, services=(), driver_traits=(), operator_traits=(),
             attached=False, handles_in_use=(), fault=None, cleaning=False):
    """What the agent writes to one deployable's provider.

    :returns: ``{'reserved': bool, 'traits': [...], 'in_use': bool}``;
        ``reserved`` is all of the inventory or none of it. A deployable
        attached through /v1 is reserved: the scheduler must not hand out
        what the host or a /v1 user holds; and so is one being scrubbed
        for its next tenant (``cleaning``).
    """
    refused = states.refuses_binds(
        status, states.HEALTH_FAILED if fault else None, bool(cleaning))
    return {'reserved': refused is not None or bool(attached),
            'traits': traits(services, driver_traits, operator_traits),
            'in_use': in_use(handles_in_use, attached)}
