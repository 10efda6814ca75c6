"""Conductor RPC endpoints: object indirection, agent reports, liveness."""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import version
from cyborg.clients import nova as nova_client
from cyborg.conductor import accelerators
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import attachments
from cyborg.conductor import attributes
from cyborg.conductor import cache
from cyborg.conductor import claims
from cyborg.conductor import coalesce
from cyborg.conductor import driver_admin
from cyborg.conductor import explain
from cyborg.conductor import health
from cyborg.conductor import hostwork
from cyborg.conductor import indirection
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.conductor import modes
from cyborg.conductor import orphans
from cyborg.conductor import quota
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor import scrub
from cyborg.conductor import skew
from cyborg.conductor import takeover
from cyborg.conductor import telemetry
from cyborg.conductor.bind import store as arq_store
from cyborg.conductor.bind import workflow as bind_workflow
from cyborg.db import api as dbapi
from cyborg.db import migration
from cyborg.notifications import arq as arq_notifications
from cyborg.notifications import base as notifications
from cyborg.objects import base as objects_base
from cyborg.objects import deployable as deployable_obj
from cyborg.objects import device as device_obj

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

BINARY = 'cyborg-conductor'


def bind_objects_to_database():
    """Make remotable object methods in this process run on the database."""
    objects_base.CyborgObject.dbapi = dbapi
    objects_base.CyborgObject.listings = cache.LISTS
    objects_base.CyborgObject.indirection_api = None


class ConductorManager:
    """Endpoints of ``cyborg.conductor.rpcapi.ConductorAPI``."""

    target = messaging.Target(version='1.15')

    def __init__(self, host, placement=None):
        self.host = host
        #: The Placement client of explanations; None builds one from
        #: [placement] (cyborg-all-in-one passes its embedded Placement's).
        self.placement = placement
        self._agent_api = None
        self.nova = nova_client.NovaClient()
        bind_objects_to_database()
        self.reports = coalesce.Coalescer(
            'reports', self._apply_reports, CONF.conductor.report_batch_size,
            CONF.conductor.report_batch_delay)
        self.heartbeats = coalesce.Coalescer(
            'heartbeats', self._record_heartbeats,
            CONF.conductor.heartbeat_batch_size,
            CONF.conductor.heartbeat_batch_delay)
        self.clock = skew.Watch(host)
        self.sight = takeover.Sight()

    @property
    def agent_api(self):
        # NOTE(conductor): built on first use, once the transport exists.
        if self._agent_api is None:
            self._agent_api = agent_rpcapi.AgentAPI()
        return self._agent_api

    def init_host(self):
        dbapi.check_connection()
        current, head = migration.version(), migration.head()
        if current != head:
            raise exception.ConfigError(
                option='[database] connection',
                reason='the schema is at revision %s but this release needs '
                       '%s; run "cyborg-dbsync upgrade"' % (current, head))
        context = cyborg_context.get_admin_context()
        lifecycle.recover_activations(context,
                                      CONF.conductor.agent_rpc_timeout)
        self._heartbeat()
        # NOTE(conductor): what a former process of this host claimed is
        # abandoned: nothing of this one runs yet.
        claims.clear_stale(context, BINARY, self.host, at_start=True)
        taken = takeover.adopt(context, self, BINARY, at_start=True)
        if taken:
            LOG.warning('Finished %d binds or unbinds that stopped '
                        'conductors left unfinished', len(taken))
        accelerators.recover(context, CONF.conductor.agent_rpc_timeout * 2)

    def del_host(self):
        # NOTE(conductor): the RPC server has stopped, so nothing new is
        # queued; what is queued is applied before the workers end.
        self.reports.stop()
        self.heartbeats.stop()

    def periodic_tasks(self):
        return [(CONF.conductor.heartbeat_interval, self._heartbeat),
                (CONF.conductor.heartbeat_interval, self._take_over),
                (CONF.conductor.health_interval, self._health),
                (orphans.interval(), self._remove_orphans)]

    def _remove_orphans(self):
        """Remove the ARQs their creator gave up on ([conductor]
        orphan_arq_age); every conductor runs it, each ARQ goes once."""
        orphans.remove(cyborg_context.get_admin_context())

    def _health(self):
        """Return the devices healthy long enough to service; put the
        drained ones in maintenance."""
        context = cyborg_context.get_admin_context()
        health.recover(context, self.agent_api)
        lifecycle.settle_drains(context)
        # NOTE(conductor): scrubs whose cast was lost, or whose conductor
        # stopped.
        scrub.run(context, self.host, self.agent_api)

    def _take_over(self):
        """Adopt the ARQ work of conductors that stopped heartbeating;
        clear their device claims."""
        context = cyborg_context.get_admin_context()
        if self.sight.steady_for(CONF.conductor.takeover_after):
            takeover.adopt(context, self, BINARY)
            claims.clear_stale(context, BINARY, self.host)
        takeover.resume(context, self)
        claims.clear_forgotten(context, self.host)
        # NOTE(conductor): an activation is one agent call, bounded by
        # agent_rpc_timeout: one older than that has no live conductor.
        lifecycle.recover_activations(
            context, CONF.conductor.agent_rpc_timeout +
            CONF.conductor.takeover_after)

    def _heartbeat(self):
        try:
            self._record_liveness()
        except Exception:
            self.sight.lost()
            raise
        self.sight.reached()

    def _record_liveness(self):
        context = cyborg_context.get_admin_context()
        # NOTE(conductor): the skew is only told; liveness is judged by the
        # database's clock, which the heartbeat writes.
        measured = skew.measure(context)
        self.clock.check(measured)
        # NOTE(conductor): calls' deadlines are stamped by other hosts'
        # clocks; judged by this one's when it alone is off, every call
        # would look late (ahead) or never (behind).
        skew.judge_deadlines(context, self.host, measured)
        dbapi.services.heartbeat(context, self.host, BINARY,
                                 topic=CONF.conductor.topic,
                                 version=version.version_string(),
                                 rpc_version=self.target.version,
                                 clock_skew=measured)

    # --- Object indirection ---------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        return indirection.class_action(context, objname, objmethod,
                                        object_versions, args, kwargs)

    @messaging.expected_exceptions(exception.CyborgException)
    def object_action(self, context, objinst, objmethod, args, kwargs):
        return indirection.action(objinst, objmethod, args, kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        target = object_versions[objinst.obj_name()]
        return objinst.obj_to_primitive(target_version=target,
                                        version_manifest=object_versions)

    # --- Agents -----------------------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def report_data(self, context, host, report):
        """A whole inventory: the database is made to match it."""
        return self.reports.submit(inventory.whole_report(host, report))

    @messaging.expected_exceptions(exception.CyborgException)
    def report_delta(self, context, host, delta):
        """What changed since the generation the agent last had applied."""
        return self.reports.submit(inventory.delta_report(host, delta))

    @staticmethod
    def _apply_reports(reports):
        return inventory.apply_reports(cyborg_context.get_admin_context(),
                                       reports)

    def device_states(self, context, host):
        """The status of each device of a host, for its Placement heal."""
        return inventory.host_states(context, host)

    def heartbeat(self, context, host, binary, version):
        dbapi.services.heartbeat(context, host, binary, version=version)

    def agent_heartbeat(self, context, host, generation):
        """An unchanged agent; returns whether its generation is ours.

        Heartbeats that arrive close together are recorded in one UPDATE.
        """
        try:
            inventory.check_host(host)
        except exception.Invalid:
            return False
        return self.heartbeats.submit((host, generation))

    @staticmethod
    def _record_heartbeats(beats):
        return inventory.record_heartbeats(
            cyborg_context.get_admin_context(), beats)

    @messaging.expected_exceptions(exception.CyborgException)
    def activate_device(self, context, uuid):
        device = lifecycle.activate(context, uuid, self.agent_api,
                                    owner=self.host)
        return self._changed(context, device)

    @messaging.expected_exceptions(exception.CyborgException)
    def drain_device(self, context, uuid):
        device = lifecycle.drain(context, uuid)
        return self._changed(context, device)

    @messaging.expected_exceptions(exception.CyborgException)
    def set_device_mode(self, context, uuid, mode):
        device = modes.set_mode(context, uuid, mode, self.agent_api,
                                owner=self.host)
        return device_obj.Device._from_db_object(
            device_obj.Device(context), device, context)

    @messaging.expected_exceptions(exception.CyborgException)
    def set_device_enabled(self, context, uuid, enabled):
        if enabled:
            device = lifecycle.enable(context, uuid, self.agent_api,
                                      owner=self.host)
        else:
            device = lifecycle.disable(context, uuid)
        return self._changed(context, device)

    def _changed(self, context, device):
        return lifecycle.changed(context, device, self.agent_api)


    # --- Accelerator requests ----------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def create_arqs(self, context, profile_name, project_id, key=None):
        return arq_store.create(context, profile_name, project_id, key)

    @messaging.expected_exceptions(exception.CyborgException)
    def get_arq(self, context, uuid, project_id=None):
        return arq_store.get(context, uuid, project_id)

    @messaging.expected_exceptions(exception.CyborgException)
    def list_arqs(self, context, project_id=None, instance_uuid=None,
                  resolved=False, paging=None):
        return bind_workflow.list_arqs(context, project_id, instance_uuid,
                                       resolved, paging)

    @messaging.expected_exceptions(exception.CyborgException)
    def bind_arqs(self, context, bindings, project_id=None):
        return bind_workflow.start(context, bindings, project_id, self.host)

    def finish_binds(self, context, uuids, failed=None):
        """Host-side work of each bind, then Bound, then Nova's event."""
        bind_workflow.finish(context, uuids, failed, self.host, self.agent_api,
                             self.nova)

    def tell_nova(self, results):
        """Nova's events; ``results``: uuid -> (instance, state)."""
        return bind_workflow.tell_nova(self.nova, results)

    @messaging.expected_exceptions(exception.CyborgException)
    def unbind_arqs(self, context, uuids, project_id=None):
        bound = notifications.collect(
            lambda: bind_workflow.arqs(context, uuids, project_id))
        released = arq_store.unbind(context, uuids, project_id,
                                    owner=self.host)
        takeover.finish_unbind(context, uuids, self, released)
        arq_notifications.unbound(context, bound)
        lifecycle.settle_drains(context)
        self._scrub_later(context)

    @messaging.expected_exceptions(exception.CyborgException)
    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    project_id=None, bound_ok=True):
        count = bind_workflow.delete(context, uuids, instance_uuid, project_id,
                                     bound_ok, self.agent_api)
        lifecycle.settle_drains(context)
        self._scrub_later(context)
        return count

    def _scrub_later(self, context):
        # NOTE(conductor): the unbind marked the deployables it freed as
        # cleaning; their scrub (host work) runs after the answer.
        conductor_rpcapi.ConductorAPI().scrub_pending(context, self.host)

    def scrub_pending(self, context):
        """Scrub the deployables marked cleaning that no conductor is
        scrubbing (cast to itself after an unbind)."""
        scrub.run(context, self.host, self.agent_api)

    # --- Attributes and programming ----------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def create_attribute(self, context, deployable_id, key, value):
        return attributes.create(context, deployable_id, key, value,
                                 self.agent_api)

    @messaging.expected_exceptions(exception.CyborgException)
    def delete_attribute(self, context, uuid):
        attributes.delete(context, uuid, self.agent_api)

    @messaging.expected_exceptions(exception.CyborgException)
    def program_deployable(self, context, uuid, image_id):
        hostwork.program(context, uuid, image_id, self.agent_api,
                         owner=self.host)
        return deployable_obj.Deployable.get(context, uuid)


    # --- Quotas (1.10) -----------------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def get_limits(self, context, project_id):
        return quota.limits(context, project_id)

    # --- Explanations (1.11) -----------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def explain_profile(self, context, uuid_or_name, project_id,
                        member_of=None):
        return explain.explain(context, uuid_or_name, project_id, member_of,
                               client=self.placement)

    # --- Telemetry (1.9) ---------------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def device_metrics(self, context, uuid, agent_timeout):
        return telemetry.device_metrics(context, uuid, self.agent_api,
                                        agent_timeout)

    # --- Cached lists (1.7) -----------------------------------------------

    def invalidate_lists(self, context, origin):
        """Another conductor wrote to the listed tables (fanout)."""
        cache.LISTS.invalidate(origin)

    # --- /v1 accelerators (1.6) -------------------------------------------

    def list_accelerators(self, context):
        return accelerators.list_all(context)

    @messaging.expected_exceptions(exception.CyborgException)
    def get_accelerator(self, context, uuid):
        return accelerators.get(context, uuid)

    @messaging.expected_exceptions(exception.CyborgException)
    def create_accelerator(self, context, name, uuid=None, project_id=None):
        return accelerators.create(context, name, uuid, project_id)

    @messaging.expected_exceptions(exception.CyborgException)
    def update_accelerator_spec(self, context, uuid, key, value,
                                revision=None):
        return accelerators.update_spec(context, uuid, key, value, revision)

    @messaging.expected_exceptions(exception.CyborgException)
    def attach_accelerator(self, context, uuid, instance_uuid=None,
                           host=None, project_id=None):
        return attachments.attach(context, uuid, self.agent_api, self,
                                  instance_uuid=instance_uuid, host=host,
                                  project_id=project_id)

    @messaging.expected_exceptions(exception.CyborgException)
    def detach_accelerator(self, context, uuid):
        attachments.detach(context, uuid, self.agent_api)

    # --- Drivers and services (1.6) ------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def list_drivers(self, context, host=None):
        return driver_admin.list_drivers(context, host)

    @messaging.expected_exceptions(exception.CyborgException)
    def install_driver(self, context, host, name):
        return driver_admin.install(context, host, name, self.agent_api,
                                    owner=self.host)

    @messaging.expected_exceptions(exception.CyborgException)
    def uninstall_driver(self, context, host, name):
        driver_admin.uninstall(context, host, name, self.agent_api,
                               owner=self.host)

    @messaging.expected_exceptions(exception.CyborgException)
    def update_driver(self, context, host, name, image_id=None):
        return driver_admin.update(context, host, name, self.agent_api,
                                   image_id, owner=self.host)

    @messaging.expected_exceptions(exception.CyborgException)
    def list_services(self, context, host=None, driver_name=None):
        return driver_admin.list_services(context, host, driver_name)

    @messaging.expected_exceptions(exception.CyborgException)
    def discover_services(self, context, host=None):
        """Have one agent (or every one) discover now; what changed."""
        return driver_admin.discover(context, host, self.agent_api)
