"""One device's providers rearranged in Placement in one step (/reshaper).

When a device changes partition mode its deployables change (a PGPU
becomes a VGPU of some type...), and so do the providers Placement holds
for it. Written provider by provider, as ``ProviderTree.sync`` does, the
scheduler could meanwhile see both arrangements, or neither; here the
inventories of every provider of the device change in one reshaper
request, which Placement refuses whole when it cannot apply it (an
allocation appeared on a provider that goes away).
"""

from oslo_log import log as logging

from cyborg import exception
from cyborg.agent import provider_plan

LOG = logging.getLogger(__name__)


class Rearranged:
    """What ``rearrange`` changed, to report or undo."""

    def __init__(self):
        #: Names of the providers created for the new arrangement.
        self.created = []
        #: Names of the providers deleted (the old arrangement).
        self.deleted = []


def rearrange(tree, key, device):
    """Give device ``key`` the providers its new report ``device`` wants.

    Creates the new providers empty (with their traits), replaces the
    inventories of all the device's providers in one ``POST /reshaper``
    (none for those that go away, no allocation moved), deletes the
    providers that went away and records the outcome in ``tree``'s saved
    state, so that its next ``sync`` has nothing more to write for the
    device. When Placement refuses, the providers created are deleted
    again and nothing else has changed.

    :param tree: the agent's ``placement.ProviderTree``.
    :param key: the device's key (text).
    :param device: the device's new primitive.
    :returns: a ``Rearranged``.
    :raises PlacementError, PlacementInventoryInUse,
        PlacementGenerationConflict, PlacementUnavailable: Placement did
        not take the new arrangement (then it holds the old one).
    """
    client = tree.client
    root = tree._root_uuid()
    old = {uuid: record for uuid, record in tree.providers.items()
           if record.get('device') == key}
    wanted = provider_plan.wanted_providers(
        {key: device}, tree.statuses, tree.extra_traits, tree.taken,
        tree.decided)
    done = Rearranged()
    if wanted:
        client.ensure_resource_classes(
            {item.resource_class for item in wanted.values()})
        client.ensure_traits(
            set().union(*(item.traits for item in wanted.values())))
    generations, created = {}, []
    try:
        for uuid, item in wanted.items():
            if uuid in old:
                continue
            generations[uuid] = _create_empty(client, root, item)
            created.append(item)
        inventories = {}
        for uuid in set(wanted) | set(old):
            item = wanted.get(uuid)
            if uuid not in generations:
                generations[uuid], _invs = client.get_inventories(uuid)
            if item is None:
                want = {}
            elif uuid in old:
                # NOTE(reshape): a provider both arrangements share keeps
                # what is allocated from it.
                want = provider_plan.inventories(
                    item, client.get_usages(uuid))
            else:
                want = provider_plan.inventories(item)
            inventories[uuid] = {
                'resource_provider_generation': generations[uuid],
                'inventories': want}
        if inventories:
            # NOTE(reshape): no allocation moves: a device changes mode
            # only while nothing is allocated on it, and Placement refuses
            # the whole request when something is.
            client.reshape(inventories, {})
    except exception.CyborgException:
        for item in created:
            _undo_create(client, item)
        raise
    done.created = sorted(item.name for item in created)
    _settle(tree, key, old, wanted, created, inventories, done)
    return done


def _create_empty(client, root, item):
    """Create a new provider of the arrangement, traits and no inventory;
    returns its generation."""
    try:
        created = client.create_provider(item.uuid, item.name, root)
        generation = created['generation']
    except exception.PlacementError as exc:
        if exc.kwargs.get('status') != 409 or \
                client.get_provider(item.uuid) is None:
            raise
        # NOTE(reshape): left by an earlier attempt whose answer was lost:
        # the reshape gives it its inventory.
        generation, _traits = client.get_traits(item.uuid)
    return client.set_traits(item.uuid, generation, item.traits)


def _undo_create(client, item):
    try:
        client.delete_provider(item.uuid)
    except exception.CyborgException as exc:
        # NOTE(reshape): an empty provider is never scheduled to; the
        # next heal adopts it, and its sync retires it.
        LOG.warning('Could not delete resource provider %s (%s) created '
                    'for a mode change that failed: %s', item.name,
                    item.uuid, exc)


def _settle(tree, key, old, wanted, created, written, done):
    """Delete the providers that went away; record what Placement holds.

    :param written: the reshaper's inventories, by provider uuid.
    """
    client = tree.client
    for uuid, record in old.items():
        if uuid in wanted:
            continue
        try:
            gone = client.delete_provider(uuid)
        except exception.CyborgException as exc:
            LOG.warning('Could not delete resource provider %s (%s) after '
                        'its device changed mode: %s; the next report '
                        'retires it', record.get('name'), uuid, exc)
            gone = False
        if gone:
            tree.providers.pop(uuid)
            done.deleted.append(record.get('name'))
        else:
            # NOTE(reshape): emptied by the reshape, and of no device now:
            # the next sync retires it. Its generation is stale; writes
            # read it again on conflict.
            record['inventories'] = {}
    new = {item.uuid for item in created}
    for uuid, item in wanted.items():
        # NOTE(reshape): the reshape moved each generation on, by how
        # much Placement does not say.
        generation, _invs = client.get_inventories(uuid)
        record = tree.providers.setdefault(uuid, {'traits': []})
        if uuid in new:
            record['traits'] = sorted(item.traits)
        record.update(name=item.name, device=key, generation=generation,
                      inventories=written[uuid]['inventories'])
    tree._save()
