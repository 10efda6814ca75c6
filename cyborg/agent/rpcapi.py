"""Client side of the agent RPC API, used by the conductor."""

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg import exception
from cyborg import rpc

CONF = cfg.CONF

TOPIC = 'cyborg-agent'


def reached(host, call, *args, **kwargs):
    """``call(*args, **kwargs)`` on ``host``'s agent; its failures keep
    their class, silence becomes AgentUnavailable (503)."""
    try:
        return call(*args, **kwargs)
    except messaging.MessagingException as exc:
        raise exception.AgentUnavailable(host=host,
                                         reason=type(exc).__name__) from exc


class AgentAPI:
    """Calls into the agent of one host.

    API version history:

    * 1.0 - Initial version: discover.
    * 1.1 - install_device.
    * 1.2 - update_device_states.
    * 1.3 - program, prepare_handle, release_handle.
    * 1.4 - attach, detach, consumers (/v1 accelerators); install_driver,
      uninstall_driver, update_driver.
    """

    RPC_API_VERSION = '1.4'

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version='1.0')
        self.client = rpc.get_client(target, version_cap=self.RPC_API_VERSION)

    def discover(self, context, host):
        """Run a discovery pass on ``host`` now and return its summary."""
        cctxt = self.client.prepare(server=host,
                                    timeout=CONF.conductor.agent_rpc_timeout)
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

    def program(self, context, host, driver_name, cpid_type, cpid_info,
                deployable_name, image_id):
        """Load a Glance image onto a deployable of ``host``."""
        cctxt = self.client.prepare(server=host, version='1.3',
                                    timeout=CONF.conductor.program_timeout)
        return cctxt.call(context, 'program', driver_name=driver_name,
                          cpid_type=cpid_type, cpid_info=cpid_info,
                          deployable_name=deployable_name, image_id=image_id)

    def prepare_handle(self, context, host, driver_name, attach_type,
                       attach_info, handle_uuid):
        """Make an attach handle of ``host`` ready (create its mdev)."""
        cctxt = self.client.prepare(server=host, version='1.3',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'prepare_handle', driver_name=driver_name,
                          attach_type=attach_type, attach_info=attach_info,
                          handle_uuid=handle_uuid)

    def release_handle(self, context, host, driver_name, attach_type,
                       attach_info, handle_uuid):
        """Undo prepare_handle on ``host`` (remove the mdev)."""
        cctxt = self.client.prepare(server=host, version='1.3',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'release_handle', driver_name=driver_name,
                          attach_type=attach_type, attach_info=attach_info,
                          handle_uuid=handle_uuid)

    def attach(self, context, host, uuid, driver_name, cpid_type, cpid_info,
               deployable_name, host_use):
        """Reserve a deployable of ``host`` in Placement for an attach and,
        for the host's own use, have its driver prepare it."""
        return self._on_deployable(context, 'attach', host, uuid,
                                   driver_name, cpid_type, cpid_info,
                                   deployable_name, host_use)

    def detach(self, context, host, uuid, driver_name, cpid_type, cpid_info,
               deployable_name, host_use):
        """Undo ``attach`` on ``host``."""
        return self._on_deployable(context, 'detach', host, uuid,
                                   driver_name, cpid_type, cpid_info,
                                   deployable_name, host_use)

    def _on_deployable(self, context, method, host, uuid, driver_name,
                       cpid_type, cpid_info, deployable_name, host_use):
        cctxt = self.client.prepare(server=host, version='1.4',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, method, uuid=uuid,
                          driver_name=driver_name, cpid_type=cpid_type,
                          cpid_info=cpid_info,
                          deployable_name=deployable_name, host_use=host_use)

    def consumers(self, context, host, deployable_name):
        """Consumers Placement has allocations of on a deployable."""
        cctxt = self.client.prepare(server=host, version='1.4',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'consumers',
                          deployable_name=deployable_name)

    def install_driver(self, context, host, name):
        """Load, install and enable a driver on ``host``; returns its
        drivers and the devices the conductor then recorded."""
        cctxt = self.client.prepare(server=host, version='1.4',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'install_driver', name=name)

    def uninstall_driver(self, context, host, name):
        """Stop using a driver on ``host``; returns as install_driver."""
        cctxt = self.client.prepare(server=host, version='1.4',
                                    timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'uninstall_driver', name=name)

    def update_driver(self, context, host, name, image_id=None):
        """Reload a driver's options on ``host`` (or load an image through
        it); returns as install_driver."""
        cctxt = self.client.prepare(server=host, version='1.4',
                                    timeout=CONF.conductor.program_timeout)
        return cctxt.call(context, 'update_driver', name=name,
                          image_id=image_id)
