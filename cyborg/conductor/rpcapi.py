"""Client side of the conductor RPC API, used by the API and the agents."""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import rpc
from cyborg import upgrade_levels

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


#: Reconnections to an unreachable broker one send of the REST API tries
#: before it fails. NOTE(rpc): oslo.messaging's default is forever, which
#: holds an API request for as long as RabbitMQ is down; one retry rides
#: out a dropped connection and still fails within [api] rpc_timeout.
API_RETRY = 1


#: Calls that only read: one sent again reads again (rpc._monitored).
READS = frozenset({
    'get_arq', 'list_arqs', 'list_accelerators', 'get_accelerator',
    'list_drivers', 'list_services', 'get_limits', 'explain_profile',
    'device_metrics'})
#: Remotable classmethods of cyborg.objects that only read.
OBJECT_READS = frozenset({
    'get', 'get_by_id', 'get_by_name', 'health_details', 'list',
    'list_view'})


def may_resend(method, kwargs):
    """Whether the call of ``method`` with ``kwargs`` may reach a conductor
    twice: it only reads, or a second run does nothing the first did not.

    A bind sent again with the same bindings is accepted and does nothing
    twice; the ARQs of an instance deleted again are gone already; a
    create that carries a key makes the ARQs of its first run again
    (conductors before 1.15 are sent no key). A delete by uuid would
    answer 404 to its second run, and is sent once.
    """
    if method == 'object_class_action_versions':
        return kwargs.get('objmethod') in OBJECT_READS
    if method == 'create_arqs':
        return kwargs.get('key') is not None
    if method == 'delete_arqs':
        return kwargs.get('uuids') is None
    return method in READS or method == 'bind_arqs'


def for_api():
    """The client the REST API calls the conductor with: a call that names
    no longer timeout waits ``[api] rpc_timeout``, and an unreachable
    broker fails it instead of blocking (both end in a 503); a read a
    conductor keeps silent on for ``[api] rpc_call_monitor_timeout`` is
    sent again, as is a write that may run twice (may_resend)."""
    return ConductorAPI(timeout=CONF.api.rpc_timeout, retry=API_RETRY,
                        reply_wait=CONF.api.rpc_timeout,
                        monitor=CONF.api.rpc_call_monitor_timeout)


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
    * 1.8 - the Accelerator object (1.0); /v1 answers are still its view
      dicts, so nothing sent or answered changes.
    * 1.9 - device_metrics: a device's latest telemetry sample, relayed
      from its agent; drain_device; scrub_pending (cast); Device 1.3
      (health, draining).
    * 1.10 - get_limits: a project's quota limits and usage.
    * 1.11 - explain_profile: why each deployable can or cannot serve
      each group of a device profile.
    * 1.12 - set_device_mode: switch a device's partition mode; Device
      1.4 (mode, modes).
    * 1.13 - Device 1.5 (offer_reason); reports may give each device an
      ``offer_reason`` (conductors before it ignore the key);
      explain_profile also lists devices that offer nothing.
    * 1.14 - Service 1.3 (clock_skew; read_at, the database's time its
      liveness is judged by).
    * 1.15 - create_arqs takes a ``key``: the ARQs' uuids derive from it,
      and a create sent again with it answers the ARQs its first run made.

    ``[upgrade_levels] conductor`` caps what is sent (rolling upgrades): a
    method newer than the cap raises RPCVersionCapped, or sends the older
    form where one exists, and objects go at the versions conductors of
    the cap know (``upgrade_levels.CONDUCTOR_OBJECTS``).
    """

    RPC_API_VERSION = '1.15'

    def __init__(self, topic=None, timeout=None, retry=None,
                 reply_wait=None, monitor=0):
        """:param timeout, retry: what a call that names no timeout waits
            for an answer, and how often a send reconnects to the broker
            (see for_api()); None: the transport's defaults.
        :param reply_wait: how long a call waits for the process's reply
            queue (rpc.get_client()); None: without a bound.
        :param monitor: seconds of a conductor's silence after which a
            call that may run twice (may_resend) is sent again; 0: never.
        """
        target = messaging.Target(topic=topic or CONF.conductor.topic,
                                  version='1.0')
        cap = upgrade_levels.version_cap('conductor', self.RPC_API_VERSION)
        #: Object name -> version the pinned conductors know; None: no pin.
        self.object_versions = upgrade_levels.object_pins()
        self.client = rpc.get_client(target, version_cap=cap,
                                     object_versions=self.object_versions,
                                     timeout=timeout, retry=retry,
                                     reply_wait=reply_wait, monitor=monitor,
                                     resend=may_resend)

    def _prepare(self, version, action, **kwargs):
        """A call context at ``version``.

        :raises RPCVersionCapped: [upgrade_levels] conductor is older.
        """
        upgrade_levels.check(self.client, 'conductor', version, action)
        if kwargs.get('timeout', 0) is None:
            # NOTE(rpc): no timeout of its own: the client's applies.
            del kwargs['timeout']
        return self.client.prepare(version=version, **kwargs)

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
        cctxt = self._prepare('1.1', 'report_delta', timeout=timeout)
        return cctxt.call(context, 'report_delta', host=host, delta=delta)

    def agent_heartbeat(self, context, host, generation, timeout=None):
        """Liveness of an unchanged agent.

        :returns: False when the conductor does not hold ``generation`` of
            this host's inventory; the agent then sends it whole.
        """
        cctxt = self._prepare('1.1', 'agent_heartbeat', timeout=timeout)
        return cctxt.call(context, 'agent_heartbeat', host=host,
                          generation=generation)

    def activate_device(self, context, uuid):
        """Have the device's agent prepare it, then mark it ready."""
        cctxt = self._prepare(
            '1.1', 'activate_device',
            timeout=CONF.conductor.agent_rpc_timeout + 30)
        return cctxt.call(context, 'activate_device', uuid=uuid)

    def set_device_enabled(self, context, uuid, enabled):
        """Upstream's enable (activates an inactive device) and disable
        (maintenance)."""
        cctxt = self._prepare(
            '1.2', 'set_device_enabled',
            timeout=CONF.conductor.agent_rpc_timeout + 30)
        return cctxt.call(context, 'set_device_enabled', uuid=uuid,
                          enabled=enabled)

    def drain_device(self, context, uuid):
        """No new bind on a ready device; maintenance once its bound ARQs
        have unbound."""
        cctxt = self._prepare('1.9', 'drain_device',
                              timeout=CONF.conductor.agent_rpc_timeout + 30)
        return cctxt.call(context, 'drain_device', uuid=uuid)

    def set_device_mode(self, context, uuid, mode):
        """Switch a device to one of the partition modes it offers, once
        nothing is bound to it; the Device in its new mode.

        :raises DeviceModeNotOffered, DeviceModeInUse, DeviceHoldsVgpus,
            DeviceModeSwitchFailed, DeviceStateConflict, AgentUnavailable.
        """
        cctxt = self._prepare('1.12', 'set_device_mode',
                              timeout=CONF.conductor.agent_rpc_timeout + 30)
        return cctxt.call(context, 'set_device_mode', uuid=uuid, mode=mode)

    def scrub_pending(self, context, server):
        """Have conductor ``server`` scrub the deployables whose last
        ARQ unbound (a cast: the unbind does not wait for it). Against a
        pinned older conductor, the next health loop of a new one does."""
        if not self.client.can_send_version('1.9'):
            return
        cctxt = self._prepare('1.9', 'scrub_pending', server=server)
        cctxt.cast(context, 'scrub_pending')

    def device_states(self, context, host, timeout=None):
        """The status of every device of ``host``, as the agent heals
        Placement with them.

        :returns: ``[{'uuid', 'controlpath': [type, info], 'status'}]``
        """
        cctxt = self._prepare('1.3', 'device_states', timeout=timeout)
        return cctxt.call(context, 'device_states', host=host)

    # --- Accelerator requests ------------------------------------------------

    def create_arqs(self, context, profile_name, project_id, key=None):
        """One ARQ per unit of each group of a device profile.

        :param key: a uuid the caller made for this create: sent again
            with it (rpc._monitored), the create answers the ARQs its first
            run made. Conductors before 1.15 are sent none.
        """
        kwargs = {'profile_name': profile_name, 'project_id': project_id}
        version = '1.4'
        if key is not None and self.client.can_send_version('1.15'):
            kwargs['key'], version = key, '1.15'
        cctxt = self._prepare(version, 'create_arqs')
        return cctxt.call(context, 'create_arqs', **kwargs)

    def get_arq(self, context, uuid, project_id=None):
        cctxt = self._prepare('1.4', 'get_arq')
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
        cctxt = self._prepare('1.5' if kwargs else '1.4', 'list_arqs')
        return cctxt.call(context, 'list_arqs', project_id=project_id,
                          instance_uuid=instance_uuid, **kwargs)

    def bind_arqs(self, context, bindings, project_id=None):
        """Start binding; the binds finish in the background.

        :raises ARQNotFound, ARQBadState, Invalid: nothing was changed.
        """
        cctxt = self._prepare('1.4', 'bind_arqs')
        return cctxt.call(context, 'bind_arqs', bindings=bindings,
                          project_id=project_id)

    def finish_binds(self, context, uuids, failed=None, server=None):
        """Have a conductor do the host-side work and tell Nova.

        :param failed: ARQ uuid -> instance of binds that already failed.
        :param server: the conductor that holds the binds (any if None).
        """
        if failed and not self.client.can_send_version('1.5'):
            # NOTE(upgrade): conductors before 1.5 cannot take the failed
            # binds; those ARQs are BindFailed already, and Nova waits
            # for their events until its own timeout.
            LOG.warning('[upgrade_levels] conductor %s: Nova is not told '
                        'of the failed binds of %s', self.client.version_cap,
                        ', '.join(sorted(failed)))
            failed = None
        if not failed:
            cctxt = self._prepare('1.4', 'finish_binds', server=server)
            cctxt.cast(context, 'finish_binds', uuids=uuids)
            return
        cctxt = self.client.prepare(version='1.5', server=server)
        cctxt.cast(context, 'finish_binds', uuids=uuids, failed=failed)

    def unbind_arqs(self, context, uuids, project_id=None):
        cctxt = self._prepare('1.4', 'unbind_arqs')
        return cctxt.call(context, 'unbind_arqs', uuids=uuids,
                          project_id=project_id)

    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    project_id=None, bound_ok=True):
        """Delete ARQs in one transaction.

        :param bound_ok: False refuses (403) to delete any bound one.
        """
        cctxt = self._prepare('1.4', 'delete_arqs')
        return cctxt.call(context, 'delete_arqs', uuids=uuids,
                          instance_uuid=instance_uuid, project_id=project_id,
                          bound_ok=bound_ok)

    # --- Attributes and programming ------------------------------------------

    def create_attribute(self, context, deployable_id, key, value):
        """Add an operator's attribute to a deployable (a trait one reaches
        Placement through the agent)."""
        cctxt = self._prepare('1.5', 'create_attribute')
        return cctxt.call(context, 'create_attribute',
                          deployable_id=deployable_id, key=key, value=value)

    def delete_attribute(self, context, uuid):
        cctxt = self._prepare('1.5', 'delete_attribute')
        return cctxt.call(context, 'delete_attribute', uuid=uuid)

    def program_deployable(self, context, uuid, image_id):
        """Program a deployable with a Glance image; returns it."""
        cctxt = self._prepare(
            '1.5', 'program_deployable',
            timeout=CONF.conductor.program_timeout + 30)
        return cctxt.call(context, 'program_deployable', uuid=uuid,
                          image_id=image_id)

    # --- /v1 accelerators ---------------------------------------------------

    def _call(self, context, method, timeout=None, **kwargs):
        cctxt = self._prepare('1.6', method, timeout=timeout)
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

    # --- Quotas (1.10) -------------------------------------------------

    def get_limits(self, context, project_id):
        """The project's limits and usage per resource class (see
        ``cyborg.conductor.quota.limits``).

        :raises QuotaUnavailable: Keystone's limits cannot be read.
        """
        cctxt = self._prepare('1.10', 'get_limits')
        return cctxt.call(context, 'get_limits', project_id=project_id)

    # --- Explanations (1.11) -------------------------------------------

    def explain_profile(self, context, uuid_or_name, project_id,
                        member_of=None):
        """Each deployable judged for each group of a device profile
        (see ``cyborg.conductor.explain.explain``).

        :raises DeviceProfileNotFound, PlacementUnavailable,
            QuotaUnavailable.
        """
        cctxt = self._prepare('1.11', 'explain_profile')
        return cctxt.call(context, 'explain_profile',
                          uuid_or_name=uuid_or_name, project_id=project_id,
                          member_of=member_of)

    # --- Telemetry (1.9) ------------------------------------------------

    def device_metrics(self, context, uuid):
        """A device's latest telemetry sample, from its agent.

        The conductor gives the agent a second less than ``[api]
        rpc_timeout`` (this call's own wait, for the API), so that a
        silent agent is named in the 503 rather than the conductor.

        :raises DeviceNotFound: no such device.
        :raises DeviceMetricsUnavailable: the device is lost, or its
            agent did not find it in its last discovery.
        :raises AgentUnavailable: the agent did not answer in time.
        """
        cctxt = self._prepare('1.9', 'device_metrics')
        return cctxt.call(context, 'device_metrics', uuid=uuid,
                          agent_timeout=max(1, CONF.api.rpc_timeout - 1))

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
        if not self.client.can_send_version('1.7'):
            # NOTE(upgrade): conductors before 1.7 cache no lists; the
            # receivers' fingerprint checks would stand in anyway.
            return
        cctxt = self.client.prepare(fanout=True, version='1.7', retry=0)
        cctxt.cast(context, 'invalidate_lists', origin=origin)
