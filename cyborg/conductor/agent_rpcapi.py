"""Client side of the agent RPC API, used by the conductor."""

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg import exception
from cyborg import rpc
from cyborg import upgrade_levels

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
    * 1.5 - prepare_handle and release_handle take the ARQ the handle is
      for (``arq_uuid``).
    * 1.6 - no new method: the agent runs the install step of the new
      devices the answer to its report names (``install``) and sends the
      outcomes with its next report (``installed``).
    * 1.7 - device_metrics: the latest telemetry sample of one device.
    * 1.8 - scrub_deployable: clean a deployable between tenants.
    * 1.9 - set_device_mode: put a device in a partition mode.

    ``[upgrade_levels] agent`` caps what is sent (rolling upgrades): a
    method newer than the cap raises RPCVersionCapped, or sends the older
    form where one exists. Arguments are plain values, no objects.
    """

    RPC_API_VERSION = '1.9'

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version='1.0')
        self.client = rpc.get_client(
            target,
            version_cap=upgrade_levels.version_cap('agent',
                                                   self.RPC_API_VERSION))

    def _prepare(self, host, version, action, **kwargs):
        """A call context for ``host``'s agent at ``version``.

        :raises RPCVersionCapped: [upgrade_levels] agent is older.
        """
        upgrade_levels.check(self.client, 'agent', version, action)
        return self.client.prepare(server=host, version=version, **kwargs)

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
        cctxt = self._prepare(host, '1.1', 'install_device',
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
        cctxt = self._prepare(host, '1.2', 'update_device_states',
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'update_device_states', devices=devices)

    def program(self, context, host, driver_name, cpid_type, cpid_info,
                deployable_name, image_id):
        """Load a Glance image onto a deployable of ``host``."""
        cctxt = self._prepare(host, '1.3', 'program',
                              timeout=CONF.conductor.program_timeout)
        return cctxt.call(context, 'program', driver_name=driver_name,
                          cpid_type=cpid_type, cpid_info=cpid_info,
                          deployable_name=deployable_name, image_id=image_id)

    def prepare_handle(self, context, host, driver_name, attach_type,
                       attach_info, handle_uuid, arq_uuid=None):
        """Make an attach handle of ``host`` ready (create its mdev) for
        ARQ ``arq_uuid``; the agent does it once per ARQ."""
        return self._on_handle(context, 'prepare_handle', host, driver_name,
                               attach_type, attach_info, handle_uuid,
                               arq_uuid)

    def release_handle(self, context, host, driver_name, attach_type,
                       attach_info, handle_uuid, arq_uuid=None):
        """Undo prepare_handle on ``host`` (remove the mdev), unless the
        handle is now prepared for another ARQ than ``arq_uuid``."""
        return self._on_handle(context, 'release_handle', host, driver_name,
                               attach_type, attach_info, handle_uuid,
                               arq_uuid)

    def _on_handle(self, context, method, host, driver_name, attach_type,
                   attach_info, handle_uuid, arq_uuid):
        kwargs = {'driver_name': driver_name, 'attach_type': attach_type,
                  'attach_info': attach_info, 'handle_uuid': handle_uuid}
        version = '1.3'
        # NOTE(agent_rpcapi): an agent older than 1.5 cannot tell ARQs
        # apart; it gets the call as before.
        if arq_uuid is not None and self.client.can_send_version('1.5'):
            version, kwargs['arq_uuid'] = '1.5', arq_uuid
        cctxt = self._prepare(host, version, method,
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, method, **kwargs)

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
        cctxt = self._prepare(host, '1.4', method,
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, method, uuid=uuid,
                          driver_name=driver_name, cpid_type=cpid_type,
                          cpid_info=cpid_info,
                          deployable_name=deployable_name, host_use=host_use)

    def consumers(self, context, host, deployable_name):
        """Consumers Placement has allocations of on a deployable."""
        cctxt = self._prepare(host, '1.4', 'consumers',
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'consumers',
                          deployable_name=deployable_name)

    def install_driver(self, context, host, name):
        """Load, install and enable a driver on ``host``; returns its
        drivers and the devices the conductor then recorded."""
        cctxt = self._prepare(host, '1.4', 'install_driver',
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'install_driver', name=name)

    def uninstall_driver(self, context, host, name):
        """Stop using a driver on ``host``; returns as install_driver."""
        cctxt = self._prepare(host, '1.4', 'uninstall_driver',
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'uninstall_driver', name=name)

    def update_driver(self, context, host, name, image_id=None):
        """Reload a driver's options on ``host`` (or load an image through
        it); returns as install_driver."""
        cctxt = self._prepare(host, '1.4', 'update_driver',
                              timeout=CONF.conductor.program_timeout)
        return cctxt.call(context, 'update_driver', name=name,
                          image_id=image_id)

    def device_metrics(self, context, host, device_key, timeout):
        """The latest telemetry sample of one device of ``host``.

        :param device_key: the device's control path ``[type, info]``.
        :param timeout: seconds to wait for the agent's answer.
        :returns: ``{'metrics', 'health', 'health_reason',
            'health_sources', 'sampled_at'}``.
        """
        cctxt = self._prepare(host, '1.7', 'device_metrics',
                              timeout=timeout)
        return cctxt.call(context, 'device_metrics', device_key=device_key)

    def scrub_deployable(self, context, host: str, driver_name: str,
                         cpid_type: str, cpid_info: str,
                         deployable_name: str) -> dict:
        """Have the driver on ``host`` clean a deployable for its next
        tenant, after its last ARQ unbound.

        :param cpid_info: the device's control path info (JSON string).
        :returns: ``{'scrubbed': bool}``: False when the driver's
            ``scrub_on_release`` is off or there was nothing to scrub.
        :raises DriverError: the scrub failed (the deployable is not
            clean).
        :raises RPCVersionCapped: [upgrade_levels] agent is before 1.8.
        """
        cctxt = self._prepare(host, '1.8', 'scrub_deployable',
                              timeout=CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'scrub_deployable',
                          driver_name=driver_name, cpid_type=cpid_type,
                          cpid_info=cpid_info,
                          deployable_name=deployable_name)

    def set_device_mode(self, context, host: str, driver_name: str,
                        address: str, mode: str, timeout=None) -> dict:
        """Put a device of ``host`` in a partition mode: its providers are
        rearranged in Placement in one step, and the conductor holds its
        new deployables before this returns.

        :param address: the PCI address of the device's control path
            (``0000:5e:00.0``; its control path info, a dict or its JSON,
            also does).
        :param mode: one of the device's ``modes``.
        :param timeout: seconds to wait; ``[conductor] agent_rpc_timeout``
            when None.
        :returns: ``{'mode', 'modes', 'changed': bool, 'deployables':
            [names]}`` of the device now.
        :raises DeviceModeNotOffered: no device of ``driver_name`` at
            ``address``, or it does not offer ``mode``.
        :raises DeviceHoldsVgpus: the device holds vGPUs.
        :raises DeviceModeSwitchFailed: Placement refused the new
            arrangement; the device keeps its mode.
        :raises DriverError: the driver is not enabled there, or failed.
        :raises RPCVersionCapped: [upgrade_levels] agent is before 1.9.
        """
        cctxt = self._prepare(
            host, '1.9', 'set_device_mode',
            timeout=timeout or CONF.conductor.agent_rpc_timeout)
        return cctxt.call(context, 'set_device_mode',
                          driver_name=driver_name, address=address,
                          mode=mode)
