"""The agent's provider subtree in Placement, kept true to the hardware."""

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import exception
from cyborg.agent import cache as report_cache
from cyborg.agent import provider_plan
from cyborg.clients import placement as placement_client
from cyborg.common import decisions
from cyborg.drivers import report

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

_WRITE_ATTEMPTS = 4

# NOTE(placement): what Placement should hold is worked out in
# provider_plan; these names stay here for the callers that import them.
provider_uuid = report.provider_uuid
service_trait = decisions.service_trait
wanted_providers = provider_plan.wanted_providers
Wanted = provider_plan.Wanted
inventories = provider_plan.inventories


class ProviderTree:
    """Writes and heals this host's accelerator providers in Placement.

    What was last written (provider generations, inventories, traits) is
    kept in a file beside the report cache, so an unchanged host costs no
    Placement request and an agent restart does not rewrite anything.
    Every write is generation-checked and retried on conflict.
    """

    def __init__(self, host, path, client=None):
        self.host = host
        self.name = CONF.agent.resource_provider_name or host
        self.path = path
        self.client = client or placement_client.PlacementClient()
        state = report_cache.placement_state(path, self.name)
        self.root = state['root']
        self.providers = state['providers']
        self.statuses = state['statuses']
        #: Device key -> {deployable name: [traits]} operators added.
        self.extra_traits = state['extra_traits']
        #: Device key -> deployable names attached outside the scheduler.
        self.taken = state['taken']
        #: Device key -> {deployable name: the conductor's decision}.
        self.decided = state['decided']
        #: Keys of lost devices whose providers are gone at last; the
        #: conductor may now forget them.
        self.released = state['released']

    # --- State --------------------------------------------------------------

    def _save(self):
        report_cache.write_json(self.path, {
            'name': self.name, 'root': self.root,
            'providers': self.providers, 'statuses': self.statuses,
            'extra_traits': self.extra_traits, 'taken': self.taken,
            'decided': self.decided, 'released': sorted(self.released)})

    def set_statuses(self, statuses, extra_traits=None, taken=None,
                     decided=None, replace=False):
        """Record what the conductor holds of this host's devices.

        :param statuses: device key -> status.
        :param decided: device key -> {deployable name: the conductor's
            decision for its provider}; for the devices of ``statuses``
            (none from a conductor older than its decisions).
        :param extra_traits: device key -> {deployable name: [traits]}
            operators added; for the devices of ``statuses``.
        :param taken: device key -> names of its deployables attached
            through /v1/accelerators; for the devices of ``statuses``.
        """
        extra_traits = extra_traits or {}
        taken = taken or {}
        decided = decided or {}
        if replace:
            self.statuses = dict(statuses)
            self.extra_traits = {}
            self.taken = {}
            self.decided = {}
        else:
            self.statuses.update(statuses)
        for key in statuses:
            for mine, theirs in ((self.extra_traits, extra_traits),
                                 (self.taken, taken),
                                 (self.decided, decided)):
                if theirs.get(key):
                    mine[key] = theirs[key]
                else:
                    mine.pop(key, None)
        self._save()

    def take(self, device_key, name, taken=True):
        """Reserve (or, with ``taken=False``, free) one deployable's
        provider for an attach outside the scheduler; sync writes it."""
        names = set(self.taken.get(device_key) or ())
        if taken:
            names.add(name)
        else:
            names.discard(name)
        if names:
            self.taken[device_key] = sorted(names)
        else:
            self.taken.pop(device_key, None)
        decision = (self.decided.get(device_key) or {}).get(name)
        if decision is not None:
            # NOTE(placement): the conductor asked for this attach (or
            # detach) over RPC, by its rules; its next answer says so too.
            self.decided[device_key][name] = dict(
                decision, in_use=taken, reserved=taken or
                decisions.device_reserved(self.statuses.get(device_key)))
        self._save()

    def consumers(self, name):
        """Consumers holding allocations on a deployable's provider."""
        return self.client.get_allocations(provider_uuid(name))

    # --- Reading Placement -------------------------------------------------

    def _root_uuid(self, refresh=False):
        if self.root is None or refresh:
            found = self.client.provider_by_name(self.name)
            if found is None:
                raise exception.ResourceProviderNotFound(name=self.name)
            if self.root not in (None, found['uuid']):
                LOG.warning('Resource provider %s is now %s (was %s)',
                            self.name, found['uuid'], self.root)
            self.root = found['uuid']
        return self.root

    def _read(self, uuid):
        generation, invs = self.client.get_inventories(uuid)
        generation, traits = self.client.get_traits(uuid)
        return {'generation': generation, 'inventories': invs,
                'traits': sorted(traits)}

    def held(self, device_keys):
        """Which of these vanished devices still have allocations.

        When Placement cannot say, every one is taken as held: a device is
        then marked lost for a while rather than forgotten while in use.
        """
        keys = set(device_keys)
        mine = {uuid: record for uuid, record in self.providers.items()
                if record.get('device') in keys}
        held = set()
        try:
            for uuid, record in mine.items():
                if any(self.client.get_usages(uuid).values()):
                    held.add(record['device'])
        except exception.CyborgException as exc:
            LOG.warning('Cannot read allocations of vanished devices (%s); '
                        'keeping them as lost', exc)
            held = {record['device'] for record in mine.values()}
        for record in mine.values():
            # NOTE(placement): the conductor keeps these as lost; it is
            # told when their providers are finally deleted.
            if record['device'] in held:
                record['held'] = True
        self._save()
        return held

    # --- Writing -------------------------------------------------------------

    def sync(self, devices):
        """Make Placement hold what ``devices`` and the statuses want.

        :param devices: device key -> device primitive found on this host.
        :returns: number of providers whose writes failed (0 when all is
            in Placement); a failure is retried at the next call.
        :raises ResourceProviderNotFound: the compute node provider is
            missing.
        :raises PlacementUnavailable: Placement did not answer.
        """
        root = self._root_uuid()
        wanted = wanted_providers(devices, self.statuses,
                                  self.extra_traits, self.taken,
                                  self.decided)
        for item in wanted.values():
            if item.uuid in self.providers:
                self.providers[item.uuid]['device'] = item.device
        pending = [item for item in wanted.values() if self._differs(item)]
        if pending:
            self.client.ensure_resource_classes(
                {item.resource_class for item in pending})
            self.client.ensure_traits(
                set().union(*(item.traits for item in pending)))
        failed = 0
        try:
            for item in pending:
                failed += not self._sync_one(root, item)
            for uuid in [u for u in self.providers if u not in wanted]:
                self._retire(uuid)
        finally:
            self._save()
        return failed

    def _differs(self, item):
        record = self.providers.get(item.uuid)
        return (record is None or record.get('lost') or
                set(record['traits']) != item.traits or
                record['inventories'] != inventories(item))

    def _sync_one(self, root, item):
        try:
            record = self.providers.get(item.uuid)
            if record is None:
                record = self._create(root, item)
            record['device'] = item.device
            record.pop('lost', None)
            record.pop('held', None)
            old = record['inventories']
            want = inventories(item)
            if want != old and self._may_shrink(item, old):
                want = inventories(item, self.client.get_usages(item.uuid))
            if want != old:
                self._write_inventories(item.uuid, want,
                                        lambda used: inventories(item, used))
            if set(record['traits']) != item.traits:
                self._write_traits(item)
        except (exception.PlacementError, exception.Conflict) as exc:
            LOG.error('Could not write resource provider %s (%s) to '
                      'Placement: %s', item.name, item.uuid, exc)
            return False
        return True

    @staticmethod
    def _may_shrink(item, old):
        old_total = old.get(item.resource_class, {}).get('total', 0)
        return any(rc != item.resource_class for rc in old) or \
            old_total > item.total

    def _create(self, root, item):
        try:
            created = self.client.create_provider(item.uuid, item.name, root)
        except exception.PlacementError as exc:
            if exc.kwargs.get('status') != 409:
                raise
            existing = self.client.get_provider(item.uuid)
            if existing is None:
                taken = self.client.provider_by_name(item.name)
                raise exception.ResourceProviderNameTaken(
                    name=item.name, uuid=item.uuid,
                    existing=taken['uuid'] if taken else '?') from exc
            # NOTE(placement): ours already (an earlier agent, or a write
            # whose answer was lost): adopt it instead of duplicating it.
            record = self._read(item.uuid)
            LOG.info('Adopted resource provider %s (%s)', item.name,
                     item.uuid)
        else:
            record = {'generation': created['generation'], 'inventories': {},
                      'traits': []}
            LOG.info('Created resource provider %s (%s) under %s',
                     item.name, item.uuid, self.name)
        record['name'] = item.name
        self.providers[item.uuid] = record
        return record

    def _write_inventories(self, uuid, value, recompute=None):
        """Generation-checked PUT of inventories, retried on conflict.

        :param recompute: builds the inventories again from fresh usages
            after a conflict; without it ``value`` is written as it is.
        """
        record = self.providers[uuid]
        for _attempt in range(_WRITE_ATTEMPTS):
            try:
                record['generation'] = self.client.set_inventories(
                    uuid, record['generation'], value)
                record['inventories'] = value
                return
            except (exception.PlacementGenerationConflict,
                    exception.PlacementInventoryInUse) as exc:
                # NOTE(placement): in use means a class we drop is still
                # allocated; fresh usages keep it, when we may recompute.
                if recompute is None and isinstance(
                        exc, exception.PlacementInventoryInUse):
                    raise
            record.update(self._read(uuid))
            if recompute is not None:
                value = recompute(self.client.get_usages(uuid))
            if record['inventories'] == value:
                return
        raise exception.PlacementGenerationConflict(uuid=uuid)

    def _write_traits(self, item):
        record = self.providers[item.uuid]
        for _attempt in range(_WRITE_ATTEMPTS):
            try:
                record['generation'] = self.client.set_traits(
                    item.uuid, record['generation'], item.traits)
                record['traits'] = sorted(item.traits)
                return
            except exception.PlacementGenerationConflict:
                record.update(self._read(item.uuid))
            except exception.PlacementError as exc:
                if exc.kwargs.get('status') != 400:
                    raise
                # NOTE(placement): someone deleted a custom trait we had
                # created; create it again.
                self.client.forget_names()
                self.client.ensure_traits(item.traits)
            if set(record['traits']) == item.traits:
                return
        raise exception.PlacementGenerationConflict(uuid=item.uuid)

    def _retire(self, uuid):
        """A provider whose deployable is gone: delete it unless allocated.
        """
        record = self.providers[uuid]
        if record.get('lost'):
            # NOTE(placement): settled until the next heal looks again, so
            # a host with a lost device still costs nothing per report.
            return
        # NOTE(placement): Placement refuses to delete a provider that has
        # allocations, so the usages are read only when it does.
        if self._delete(uuid):
            LOG.info('Deleted resource provider %s (%s)', record.get('name'),
                     uuid)
            return
        used = self.client.get_usages(uuid)
        want = provider_plan.fully_reserved(record['inventories'], used)
        if want != record['inventories']:
            self._write_inventories(uuid, want)
        record['lost'] = True
        LOG.warning('Resource provider %s (%s) has allocations but its '
                    'device is gone; it stays, fully reserved, until they '
                    'are released', record.get('name'), uuid)

    # --- Healing -------------------------------------------------------------

    def heal(self, devices):
        """Compare Placement with what was written and repair the drift.

        :returns: what ``sync`` returns.
        """
        root = self._root_uuid(refresh=True)
        live = {p['uuid']: p for p in self.client.providers_in_tree(root)}
        drift = False
        for uuid, record in list(self.providers.items()):
            found = live.get(uuid)
            if found is None:
                LOG.warning('Resource provider %s (%s) is no longer in '
                            'Placement; creating it again',
                            record.get('name'), uuid)
                del self.providers[uuid]
                drift = True
            elif found['generation'] != record['generation']:
                record.update(self._read(uuid))
                drift = True
            if record.get('lost') and uuid in self.providers:
                self._release(uuid, record)
        for uuid, found in live.items():
            if uuid not in self.providers and \
                    uuid == provider_uuid(found['name']):
                record = self._read(uuid)
                record.update(name=found['name'], device=None)
                self.providers[uuid] = record
                drift = True
        if drift:
            # NOTE(placement): a custom trait or class may have gone too.
            self.client.forget_names()
        return self.sync(devices)

    def _release(self, uuid, record):
        if any(self.client.get_usages(uuid).values()):
            return
        if self._delete(uuid):
            LOG.info('Lost device\'s resource provider %s (%s) has no '
                     'allocations any more; deleted it', record.get('name'),
                     uuid)

    def _delete(self, uuid):
        if not self.client.delete_provider(uuid):
            return False
        record = self.providers.pop(uuid)
        if record.get('held') and record.get('device'):
            self.released.add(record['device'])
        return True

    def forget_released(self, keys):
        """The conductor was told these devices are gone for good."""
        self.released.difference_update(keys)
        self._save()
