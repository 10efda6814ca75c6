"""Conductor RPC endpoints: object indirection, agent reports, liveness."""

from concurrent import futures
import re

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import states
from cyborg import version
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.clients import nova as nova_client
from cyborg.conductor import accelerators
from cyborg.conductor import attachments
from cyborg.conductor import attributes
from cyborg.conductor import binding
from cyborg.conductor import cache
from cyborg.conductor import coalesce
from cyborg.conductor import driver_admin
from cyborg.conductor import hostwork
from cyborg.conductor import inventory
from cyborg.conductor import lifecycle
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor import takeover
from cyborg.db import api as dbapi
from cyborg.db import migration
from cyborg.drivers import report as driver_report
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

    target = messaging.Target(version='1.7')

    def __init__(self, host):
        self.host = host
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
                (CONF.conductor.heartbeat_interval, self._take_over)]

    def _take_over(self):
        """Adopt the ARQ work of conductors that stopped heartbeating."""
        context = cyborg_context.get_admin_context()
        takeover.adopt(context, self, BINARY)
        # NOTE(conductor): an activation is one agent call, bounded by
        # agent_rpc_timeout: one older than that has no live conductor.
        lifecycle.recover_activations(
            context, CONF.conductor.agent_rpc_timeout +
            CONF.conductor.takeover_after)

    def _heartbeat(self):
        dbapi.services.heartbeat(cyborg_context.get_admin_context(),
                                 self.host, BINARY, topic=CONF.conductor.topic,
                                 version=version.version_string(),
                                 rpc_version=self.target.version)

    # --- Object indirection ---------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        objclass = objects_base.CyborgObject.obj_class_from_name(
            objname, object_versions[objname])
        result = getattr(objclass, objmethod)(context, *args, **kwargs)
        return self._backport(result, object_versions)

    @messaging.expected_exceptions(exception.CyborgException)
    def object_action(self, context, objinst, objmethod, args, kwargs):
        before = objinst.obj_clone()
        result = getattr(objinst, objmethod)(*args, **kwargs)
        updates = {}
        for name, field in objinst.fields.items():
            if not objinst.obj_attr_is_set(name):
                continue
            value = getattr(objinst, name)
            if (not before.obj_attr_is_set(name) or
                    getattr(before, name) != value):
                updates[name] = field.to_primitive(objinst, name, value)
        updates['obj_what_changed'] = objinst.obj_what_changed()
        return updates, result

    def object_backport_versions(self, context, objinst, object_versions):
        target = object_versions[objinst.obj_name()]
        return objinst.obj_to_primitive(target_version=target,
                                        version_manifest=object_versions)

    @staticmethod
    def _backport(result, object_versions):
        # NOTE(objects): a caller that runs older object versions gets its
        # own versions back, so rolling upgrades keep working.
        if isinstance(result, objects_base.CyborgObject):
            wanted = object_versions.get(result.obj_name())
            if wanted and wanted != result.VERSION:
                return result.obj_to_primitive(
                    target_version=wanted, version_manifest=object_versions)
        return result

    # --- Agents -----------------------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def report_data(self, context, host, report):
        """A whole inventory: the database is made to match it."""
        parsed = driver_report.HostReport.from_primitive(report)
        _check_host(host, parsed.host)
        return self.reports.submit(inventory.Report(
            host=host, devices=parsed.devices,
            generation=report.get('generation'),
            failed_drivers=tuple(report.get('failed_drivers', ())),
            details=_details(report), held=tuple(report.get('held', ()))))

    @messaging.expected_exceptions(exception.CyborgException)
    def report_delta(self, context, host, delta):
        """What changed since the generation the agent last had applied."""
        _check_host(host)
        changed = driver_report.HostReport.from_primitive(
            {'host': host, 'devices': delta.get('changed', [])}).devices
        return self.reports.submit(inventory.Report(
            host=host, devices=changed,
            removed=list(delta.get('removed', [])),
            generation=delta['generation'],
            base_generation=delta['base_generation'],
            details=_details(delta), held=tuple(delta.get('held', ()))))

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
            _check_host(host)
        except exception.Invalid:
            return False
        return self.heartbeats.submit((host, generation))

    @staticmethod
    def _record_heartbeats(beats):
        generations = {}
        for host, generation in beats:
            # NOTE(conductor): two heartbeats of one host in one batch
            # (a resend): the later generation is the agent's now.
            generations[host] = generation
        found = dbapi.services.agent_heartbeats(
            cyborg_context.get_admin_context(), inventory.AGENT_BINARY,
            generations)
        answers = []
        for host, generation in beats:
            current = found[host] and generations[host] == generation
            if not current:
                LOG.info('Host %s sent a heartbeat for generation %s, which '
                         'is not the one recorded; it must send its whole '
                         'inventory', host, generation)
            answers.append(current)
        return answers

    @messaging.expected_exceptions(exception.CyborgException)
    def activate_device(self, context, uuid):
        device = lifecycle.activate(context, uuid, self.agent_api)
        return self._changed(context, device)

    @messaging.expected_exceptions(exception.CyborgException)
    def set_device_enabled(self, context, uuid, enabled):
        if enabled:
            device = lifecycle.enable(context, uuid, self.agent_api)
        else:
            device = lifecycle.disable(context, uuid)
        return self._changed(context, device)

    def _changed(self, context, device):
        """Have the device's agent reserve or free it in Placement."""
        lifecycle.tell_agent(context, device, self.agent_api)
        return device_obj.Device._from_db_object(
            device_obj.Device(context), device, context)


    # --- Accelerator requests ----------------------------------------------

    @messaging.expected_exceptions(exception.CyborgException)
    def create_arqs(self, context, profile_name, project_id):
        return binding.create(context, profile_name, project_id)

    @messaging.expected_exceptions(exception.CyborgException)
    def get_arq(self, context, uuid, project_id=None):
        return binding.get(context, uuid, project_id)

    @messaging.expected_exceptions(exception.CyborgException)
    def list_arqs(self, context, project_id=None, instance_uuid=None,
                  resolved=False, paging=None):
        if resolved and instance_uuid is None:
            # NOTE(conductor): without an instance there is nothing to wait
            # for: the resolved ARQs are listed, the others left out.
            return binding.list_arqs(context, project_id, resolved=True,
                                     **(paging or {}))
        if resolved:
            waiting = binding.unresolved(context, instance_uuid, project_id)
            if waiting:
                raise exception.ARQsUnresolved(instance=instance_uuid,
                                               uuids=', '.join(waiting))
        return binding.list_arqs(context, project_id, instance_uuid,
                                 **(paging or {}))

    @messaging.expected_exceptions(exception.CyborgException)
    def bind_arqs(self, context, bindings, project_id=None):
        started, failed = binding.start_bind(context, bindings, project_id,
                                             owner=self.host)
        if started or failed:
            # NOTE(conductor): the API answers 202 at once; Nova hears of
            # failed binds too from the cast, never while it waits. The
            # cast comes back here: this conductor holds the binds.
            conductor_rpcapi.ConductorAPI().finish_binds(
                context, started, failed={
                    uuid: bindings[uuid]['instance_uuid'] for uuid in failed},
                server=self.host)
        return started

    def finish_binds(self, context, uuids, failed=None):
        """Host-side work of each bind, then Bound, then Nova's event.

        :param failed: ARQ uuid -> instance of binds that already failed
            (no free handle): Nova only needs to hear of them.
        """
        results = {uuid: (instance, states.ARQ_BIND_FAILED)
                   for uuid, instance in (failed or {}).items()}
        for uuid in uuids:
            job = binding.bind_job(context, uuid)
            if job is None or not takeover.holds(context, job, self.host):
                continue
            ok = hostwork.bind(context, job, self.agent_api)
            done = binding.finish_bind(context, uuid, ok=ok, owner=self.host)
            if done == binding.LOST:
                # NOTE(conductor): another conductor took the bind over
                # (this one looked dead); the handle is its now.
                LOG.warning('Conductor %s lost the bind of ARQ %s to '
                            'another conductor', self.host, uuid)
            elif done is None and ok:
                # NOTE(conductor): unbound or deleted while the agent
                # worked: undo what it prepared.
                hostwork.release(context, job['prepared'], self.agent_api)
            elif done is not None:
                results[uuid] = done
        self.tell_nova(results)

    def tell_nova(self, results):
        """One event batch per instance; ``results``: uuid -> (instance,
        state)."""
        by_instance = {}
        for uuid, (instance, state) in results.items():
            by_instance.setdefault(instance, {})[uuid] = (
                state == states.ARQ_BOUND)
        for instance, outcome in by_instance.items():
            self.nova.bound(instance, outcome)

    @messaging.expected_exceptions(exception.CyborgException)
    def unbind_arqs(self, context, uuids, project_id=None):
        released = binding.unbind(context, uuids, project_id,
                                  owner=self.host)
        takeover.finish_unbind(context, uuids, self, released)

    @messaging.expected_exceptions(exception.CyborgException)
    def delete_arqs(self, context, uuids=None, instance_uuid=None,
                    project_id=None, bound_ok=True):
        count, released = binding.delete(context, uuids, instance_uuid,
                                         project_id, bound_ok)
        hostwork.release(context, released, self.agent_api)
        return count

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
        hostwork.program(context, uuid, image_id, self.agent_api)
        return deployable_obj.Deployable.get(context, uuid)


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
        driver_admin.check_host(context, host)
        result = agent_rpcapi.reached(
            host, self.agent_api.install_driver, context, host, name)
        driver_admin.record(context, host, result)
        return driver_admin.driver_entry(context, host, name)

    @messaging.expected_exceptions(exception.CyborgException)
    def uninstall_driver(self, context, host, name):
        entry = driver_admin.driver_entry(context, host, name)
        if not entry['enabled']:
            raise exception.DriverNotEnabled(name=name, host=host)
        held = driver_admin.bindings_of(context, host, entry['driver_name'])
        if held:
            raise exception.DriverInUse(name=entry['name'], host=host,
                                        what='; '.join(held[:5]))
        result = agent_rpcapi.reached(
            host, self.agent_api.uninstall_driver, context, host,
            entry['name'])
        driver_admin.record(context, host, result)

    @messaging.expected_exceptions(exception.CyborgException)
    def update_driver(self, context, host, name, image_id=None):
        entry = driver_admin.driver_entry(context, host, name)
        if not entry['enabled']:
            raise exception.DriverNotEnabled(name=name, host=host)
        if image_id is not None:
            image_id = hostwork.resolve_image(image_id)
            # NOTE(conductor): as programming one deployable, an image is
            # never loaded under an instance or a host using the devices.
            held = driver_admin.bindings_of(context, host,
                                            entry['driver_name'])
            if held:
                raise exception.DriverInUse(name=entry['name'], host=host,
                                            what='; '.join(held[:5]))
        before = driver_admin.snapshot(context, host)
        try:
            result = agent_rpcapi.reached(
                host, self.agent_api.update_driver, context, host,
                entry['name'], image_id)
        except exception.DriverError as exc:
            raise exception.DriverUpdateFailed(
                name=entry['name'], host=host, reason=str(exc)) from exc
        driver_admin.record(context, host, result)
        entry = driver_admin.driver_entry(context, host, name)
        entry['changes'] = driver_admin.changes(
            before, driver_admin.snapshot(context, host))
        return entry

    @messaging.expected_exceptions(exception.CyborgException)
    def list_services(self, context, host=None, driver_name=None):
        if host is not None:
            driver_admin.check_host(context, host)
        return driver_admin.services(context, host, driver_name)

    @messaging.expected_exceptions(exception.CyborgException)
    def discover_services(self, context, host=None):
        """Have one agent (or every one) discover now; what changed."""
        if host is not None:
            driver_admin.check_host(context, host)
        hosts = [host] if host else driver_admin.agent_hosts(context)
        # NOTE(conductor): agents discover in parallel, so asking every
        # host takes as long as the slowest, not the sum.
        with futures.ThreadPoolExecutor(
                max_workers=max(1, min(16, len(hosts)))) as pool:
            return list(pool.map(
                lambda name: self._discover_one(context, name), hosts))

    def _discover_one(self, context, host):
        before = driver_admin.snapshot(context, host)
        entry = {'host': host, 'error': None}
        try:
            agent_rpcapi.reached(host, self.agent_api.discover, context,
                                    host)
        except exception.CyborgException as exc:
            entry['error'] = str(exc)
        entry.update(driver_admin.changes(
            before, driver_admin.snapshot(context, host)))
        return entry


#: What a host name may be: what Nova and Placement accept, without
#: whitespace or control characters.
_HOST = re.compile(r'^[^\s\x00-\x1f\x7f/]{1,255}$')


def _check_host(host, named=None):
    """Turn away a report from a host whose name is not one, or that names
    another host than the one it is sent as."""
    if not isinstance(host, str) or not _HOST.match(host):
        LOG.warning('Ignoring a report from an invalid host name %r', host)
        raise exception.Invalid(reason='invalid host name %r' % (host,))
    if named is not None and named != host:
        LOG.warning('Ignoring a report of host %s sent as host %s', named,
                    host)
        raise exception.Invalid(
            reason='report of host %s sent as %s' % (named, host))


def _details(report):
    return {name: report.get(name)
            for name in ('version', 'rpc_version', 'drivers',
                         'available_drivers', 'report_interval')}
