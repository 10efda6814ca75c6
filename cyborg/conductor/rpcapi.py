"""Client side of the conductor RPC API, used by the API and the agents."""

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg import rpc

CONF = cfg.CONF


class ConductorAPI:
    """Calls into the conductors (any one of them answers).

    API version history:

    * 1.0 - Initial version: object indirection, report_data, heartbeat.
    * 1.1 - report_delta, agent_heartbeat, activate_device; reports carry
      a generation.
    * 1.2 - set_device_enabled.
    * 1.3 - device_states; reports may name ``held`` devices (gone, but
      still allocated in Placement).
    * 1.4 - accelerator requests: create_arqs, get_arq, list_arqs,
      bind_arqs, finish_binds, unbind_arqs, delete_arqs.
    * 1.5 - create_attribute, delete_attribute, program_deployable;
      list_arqs checks resolution and pages; finish_binds takes the
      binds that failed at once, to tell Nova.
    * 1.6 - /v1 accelerators: list_accelerators, get_accelerator,
      create_accelerator, update_accelerator_spec, attach_accelerator,
      detach_accelerator; drivers and services: list_drivers,
      install_driver, uninstall_driver, update_driver, list_services,
      discover_services.
    * 1.7 - invalidate_lists (fanout): a conductor wrote to the tables
      whose lists the conductors cache.
    """

    RPC_API_VERSION = '1.7'

    def __init__(self, topic=None):
        target = messaging.Target(topic=topic or CONF.conductor.topic,
                                  version='1.0')
        self.client = rpc.get_client(target, version_cap=self.RPC_API_VERSION)

    # --- Object indirection (remotable methods of cyborg.objects) ----------

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_class_action_versions',
                          objname=objname, objmethod=objmethod,
                          object_versions=object_versions, args=args,
                          kwargs=kwargs)

    def object_action(self, context, objinst, objmethod, args, kwargs):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_action', objinst=objinst,
                          objmethod=objmethod, args=args, kwargs=kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_backport_versions',
                          objinst=objinst, object_versions=object_versions)

    # --- Agents ------------------------------------------------------------

    def report_data(self, context, host, report, timeout=None):
        """Send an agent's discovered inventory; returns what was recorded.

        :param report: ``cyborg.drivers.report.HostReport`` as a primitive.
        :raises StaleReport: the conductor holds a newer generation of this
            host's inventory (kwargs ``current``); nothing was written and
            the agent sends it again under a newer generation.
        :raises InvalidReport: the report names a device or deployable twice,
            or a deployable of another host; nothing was written.
        """
        cctxt = self.client.prepare(timeout=timeout)
        return cctxt.call(context, 'report_data', host=host, report=report)

    def report_delta(self, context, host, delta, timeout=None):
        """Send what changed since the generation the conductor last applied.

        :raises GenerationConflict: the conductor holds another generation;
            the agent must send its whole inventory with ``report_data``.
        """
        cctxt = self.client.prepare(version='1.1', timeout=timeout)
        return cctxt.call(context, 'report_delta', host=host, delta=delta)

    def agent_heartbeat(self, context, host, generation, timeout=None):
        """Liveness of an unchanged agent.

        :returns: False when the conductor does not hold ``generation`` of
            this host's inventory; the agent then sends it whole.
        """
        cctxt = self.client.prepare(version='1.1', timeout=timeout)
        return cctxt.call(context, 'agent_heartbeat', host=host,
                          generation=generation)

    def activate_device(self, context, uuid):
        """Have the device's agent prepare it, then mark it ready."""
        cctxt = self.client.prepare(
            version='1.1', timeout=CONF.conductor.agent_rpc_timeout + 30)
        return cctxt.call(context, 'activate_device', uuid=uuid)

    def set_device_enabled(self, context, uuid, enabled):
        """Upstream's enable (activates an inactive device) and disable
        (maintenance)."""
        cctxt = self.client.prepare(
            version='1.2', timeout=CONF.conductor.agent_rpc_timeout + 30)
        return cctxt.call(context, 'set_device_enabled', uuid=uuid,
                          enabled=enabled)

    def device_states(self, context, host, timeout=None):
        """The status of every device of ``host``, as the agent heals
        Placement with them.

        :returns: ``[{'uuid', 'controlpath': [type, info], 'status'}]``
        """
        cctxt = self.client.prepare(version='1.3', timeout=timeout)
        return cctxt.call(context, 'device_states', host=host)

    # --- Accelerator requests ------------------------------------------------

    def create_arqs(self, context, profile_name, project_id):
        """One ARQ per unit of each group of a device profile."""
        cctxt = self.client.prepare(version='1.4')
        return cctxt.call(context, 'create_arqs', profile_name=profile_name,
                          project_id=project_id)

    def get_arq(self, context, uuid, project_id=None):
        cctxt = self.client.prepare(version='1.4')
        return cctxt.call(context, 'get_arq', uuid=uuid,
                          project_id=project_id)

    def list_arqs(self, context, project_id=None, instance_uuid=None,
                  resolved=False, paging=None):
        """ARQs; ``resolved`` raises ARQsUnresolved while any of the
        instance's is not; ``paging``: limit, marker, sort_key, sort_dir.
        """
        kwargs = {}
        if resolved or paging:
            kwargs = {'resolved': resolved, 'paging': paging}
        cctxt = self.client.prepare(version='1.5' if kwargs else '1.4')
        return cctxt.call(context, 'list_arqs', project_id=project_id,
                          instance_uuid=instance_uuid, **kwargs)

    def bind_arqs(self, context, bindings, project_id=None):
        """Start binding; the binds finish in the background.

        :raises ARQNotFound, ARQBadState, Invalid: nothing was changed.
        """
        cctxt = self.client.prepare(version='1.4')
        return cctxt.call(context, 'bind_arqs', bindings=bindings,
                          project_id=project_id)

    def finish_binds(self, context, uuids, failed=None):
        """Have a conductor do the host-side work and tell Nova.

        :param failed: ARQ uuid -> instance of binds that already failed.
        """
        if not failed:
            cctxt = self.client.prepare(version='1.4')
            cctxt.cast(context, 'finish_binds', uuids=uuids)
            return
        cctxt = self.client.prepare(version='1.5')
        cctxt.cast(context, 'finish_binds', uuids=uuids, failed=failed)

    def unbind_arqs(self, context, uuids, project_id=None):
        cctxt = self.client.prepare(version='1.4')
        return cctxt.call(context, 'unbind_arqs', uuids=uuids,
                          project_id=project_id)

    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    project_id=None, bound_ok=True):
        """Delete ARQs in one transaction.

        :param bound_ok: False refuses (403) to delete any bound one.
        """
        cctxt = self.client.prepare(version='1.4')
        return cctxt.call(context, 'delete_arqs', uuids=uuids,
                          instance_uuid=instance_uuid, project_id=project_id,
                          bound_ok=bound_ok)

    # --- Attributes and programming ------------------------------------------

    def create_attribute(self, context, deployable_id, key, value):
        """Add an operator's attribute to a deployable (a trait one reaches
        Placement through the agent)."""
        cctxt = self.client.prepare(version='1.5')
        return cctxt.call(context, 'create_attribute',
                          deployable_id=deployable_id, key=key, value=value)

    def delete_attribute(self, context, uuid):
        cctxt = self.client.prepare(version='1.5')
        return cctxt.call(context, 'delete_attribute', uuid=uuid)

    def program_deployable(self, context, uuid, image_id):
        """Program a deployable with a Glance image; returns it."""
        cctxt = self.client.prepare(
            version='1.5', timeout=CONF.conductor.program_timeout + 30)
        return cctxt.call(context, 'program_deployable', uuid=uuid,
                          image_id=image_id)

    # --- /v1 accelerators ---------------------------------------------------

    def _call(self, context, method, timeout=None, **kwargs):
        cctxt = self.client.prepare(version='1.6', timeout=timeout)
        return cctxt.call(context, method, **kwargs)

    def list_accelerators(self, context):
        return self._call(context, 'list_accelerators')

    def get_accelerator(self, context, uuid):
        return self._call(context, 'get_accelerator', uuid=uuid)

    def create_accelerator(self, context, name, uuid=None, project_id=None):
        return self._call(context, 'create_accelerator', name=name,
                          uuid=uuid, project_id=project_id)

    def update_accelerator_spec(self, context, uuid, key, value,
                                revision=None):
        """Set the whole spec (key None) or one key; ``revision`` is the
        one the caller read (AcceleratorChanged when it is not current)."""
        return self._call(context, 'update_accelerator_spec', uuid=uuid,
                          key=key, value=value, revision=revision)

    def attach_accelerator(self, context, uuid, instance_uuid=None,
                           host=None, project_id=None):
        return self._call(context, 'attach_accelerator',
                          timeout=CONF.conductor.program_timeout + 30,
                          uuid=uuid, instance_uuid=instance_uuid, host=host,
                          project_id=project_id)

    def detach_accelerator(self, context, uuid):
        return self._call(context, 'detach_accelerator',
                          timeout=CONF.conductor.agent_rpc_timeout * 3 + 30,
                          uuid=uuid)

    # --- Drivers and services ------------------------------------------------

    def list_drivers(self, context, host=None):
        return self._call(context, 'list_drivers', host=host)

    def install_driver(self, context, host, name):
        return self._call(context, 'install_driver',
                          timeout=CONF.conductor.agent_rpc_timeout + 30,
                          host=host, name=name)

    def uninstall_driver(self, context, host, name):
        return self._call(context, 'uninstall_driver',
                          timeout=CONF.conductor.agent_rpc_timeout + 30,
                          host=host, name=name)

    def update_driver(self, context, host, name, image_id=None):
        return self._call(context, 'update_driver',
                          timeout=CONF.conductor.program_timeout + 30,
                          host=host, name=name, image_id=image_id)

    def list_services(self, context, host=None, driver_name=None):
        return self._call(context, 'list_services', host=host,
                          driver_name=driver_name)

    def discover_services(self, context, host=None):
        return self._call(context, 'discover_services',
                          timeout=CONF.conductor.agent_rpc_timeout + 30,
                          host=host)

    def heartbeat(self, context, host, binary, version):
        """Tell the conductors a service is alive (fire and forget)."""
        cctxt = self.client.prepare()
        cctxt.cast(context, 'heartbeat', host=host, binary=binary,
                   version=version)

    def invalidate_lists(self, context, origin):
        """Tell every conductor that the lists it caches may be stale.

        :param origin: the sender's ``cache.LISTS.origin``; the sender
            itself knew already. Sent once: a message that cannot go is
            lost, and the receivers' fingerprint checks stand in for it.
        """
        cctxt = self.client.prepare(fanout=True, version='1.7', retry=0)
        cctxt.cast(context, 'invalidate_lists', origin=origin)
