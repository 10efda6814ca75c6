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
    * 1.1 - install_device.
    * 1.2 - update_device_states.
    """

    RPC_API_VERSION = '1.2'

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version='1.0')
        self.client = rpc.get_client(target, version_cap=self.RPC_API_VERSION)

    def discover(self, context, host):
        """Run a discovery pass on ``host`` now and return its summary."""
        cctxt = self.client.prepare(server=host)
        return cctxt.call(context, 'discover')

    def install_device(self, context, host, driver_name, cpid_type,
                       cpid_info):
        """Run the driver's install step for one device of ``host``.

        :param cpid_info: the device's control path info (JSON string).
        """
        cctxt = self.client.prepare(server=host, version='1.1',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'install_device', driver_name=driver_name,
                          cpid_type=cpid_type, cpid_info=cpid_info)

    def update_device_states(self, context, host, devices):
        """Tell ``host``'s agent which statuses its devices now have, so it
        reserves or frees them in Placement.

        :param devices: ``[{'uuid', 'controlpath': [type, info], 'status'}]``
        :returns: whether Placement holds the change (None: the agent
            does not use Placement).
        """
        cctxt = self.client.prepare(server=host, version='1.2',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'update_device_states', devices=devices)
