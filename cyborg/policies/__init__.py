"""Default policies, one module per resource; listed for oslo.policy."""

from cyborg.policies import accelerator
from cyborg.policies import agent
from cyborg.policies import arq
from cyborg.policies import attribute
from cyborg.policies import base
from cyborg.policies import conductor
from cyborg.policies import deployable
from cyborg.policies import device
from cyborg.policies import device_profile
from cyborg.policies import driver
from cyborg.policies import limit

_MODULES = (base, device, deployable, attribute, agent, device_profile,
            arq, driver, accelerator, limit, conductor)


def list_rules():
    """Every default rule (the ``oslo.policy.policies`` entry point)."""
    return [rule for module in _MODULES for rule in module.list_rules()]
