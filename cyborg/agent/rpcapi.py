"""Client side of the agent RPC API, used by the conductor."""

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg import rpc

CONF = cfg.CONF

TOPIC = 'cyborg-agent'


class AgentAPI:
    """Calls into the agent of one host.

    API version history:

    * 1.0 - Initial version: discover.
    """

    RPC_API_VERSION = '1.0'

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version='1.0')
        self.client = rpc.get_client(target, version_cap=self.RPC_API_VERSION)

    def discover(self, context, host):
        """Run a discovery pass on ``host`` now and return its summary."""
        cctxt = self.client.prepare(server=host)
        return cctxt.call(context, 'discover')
