"""Driver operations on agents (list, install, uninstall, update) and the
services their devices offer, with discovery on demand."""

from concurrent import futures

from oslo_log import log as logging

from cyborg import exception
from cyborg.conductor import accelerators
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import claims
from cyborg.conductor import hostwork
from cyborg.db import claims as claim_db
from cyborg.db import drivers as driver_db
from cyborg.db import services as service_queries
from cyborg.notifications import driver as driver_notifications

LOG = logging.getLogger(__name__)

AGENT_BINARY = accelerators.AGENT_BINARY

list_drivers = driver_db.list_drivers
driver_entry = driver_db.driver_entry
check_host = driver_db.check_host
bindings_of = driver_db.bindings_of
snapshot = driver_db.snapshot
services = driver_db.services
agent_hosts = driver_db.agent_hosts


def changes(before, after):
    """``{'added', 'removed', 'changed'}`` device uuids between snapshots.
    """
    return {'added': sorted(set(after) - set(before)),
            'removed': sorted(set(before) - set(after)),
            'changed': sorted(uuid for uuid in set(before) & set(after)
                              if before[uuid] != after[uuid])}


def record(context, host, result):
    """Store the drivers an agent now has (what its RPC returned)."""
    service_queries.record_drivers(context, host, AGENT_BINARY,
                                   result.get('drivers', []),
                                   result.get('available_drivers', []))


def _check_free(context, host, entry):
    held = bindings_of(context, host, entry['driver_name'])
    if held:
        raise exception.DriverInUse(name=entry['name'], host=host,
                                    what='; '.join(held[:5]))


def _devices(context, host, name):
    """The uuids of the devices the driver ``name`` has on ``host``."""
    try:
        driver_name = driver_entry(context, host, name)['driver_name']
    except exception.DriverNotAvailable:
        driver_name = name
    return claim_db.devices_of(context, host, driver_name)


def install(context, host, name, agent_api, owner=None):
    """Have an agent install and enable a driver; its entry now.

    The devices the driver already has on the host (it was installed
    before) are claimed meanwhile.
    """
    check_host(context, host)
    with claims.held(context, _devices(context, host, name),
                     claims.DRIVER_INSTALL, owner):
        result = _on_agent(context, 'install', host, name,
                           agent_api.install_driver, context, host, name)
        record(context, host, result)
    entry = driver_entry(context, host, name)
    driver_notifications.ended(context, 'install', host, name, entry)
    return entry


def _on_agent(context, action, host, name, call, *args, image_id=None):
    """``call(*args)`` on the agent, between the start and the end or
    error notifications of ``action``."""
    driver_notifications.started(context, action, host, name, image_id)
    try:
        return agent_rpcapi.reached(host, call, *args)
    except exception.CyborgException as exc:
        driver_notifications.failed(context, action, host, name, exc,
                                    image_id)
        raise


def uninstall(context, host, name, agent_api, owner=None):
    """Have an agent disable a driver none of whose devices is in use;
    its devices are claimed meanwhile."""
    entry = driver_entry(context, host, name)
    if not entry['enabled']:
        raise exception.DriverNotEnabled(name=name, host=host)
    with claims.held(context, _devices(context, host, name),
                     claims.DRIVER_UNINSTALL, owner):
        _check_free(context, host, entry)
        result = _on_agent(context, 'uninstall', host, entry['name'],
                           agent_api.uninstall_driver, context, host,
                           entry['name'])
        record(context, host, result)
    driver_notifications.ended(context, 'uninstall', host, entry['name'],
                               lambda: driver_entry(context, host, name))


def update(context, host, name, agent_api, image_id=None, owner=None):
    """Have an agent update a driver (and its devices' image); its entry
    with the devices that changed. Its devices are claimed meanwhile."""
    entry = driver_entry(context, host, name)
    if not entry['enabled']:
        raise exception.DriverNotEnabled(name=name, host=host)
    if image_id is not None:
        image_id = hostwork.resolve_image(image_id)
    with claims.held(context, _devices(context, host, name),
                     claims.DRIVER_UPDATE, owner):
        if image_id is not None:
            # NOTE(conductor): as programming one deployable, an image is
            # never loaded under an instance or a host using the devices.
            _check_free(context, host, entry)
        before = snapshot(context, host)
        try:
            result = _on_agent(context, 'update', host, entry['name'],
                               agent_api.update_driver, context, host,
                               entry['name'], image_id, image_id=image_id)
        except exception.DriverError as exc:
            raise exception.DriverUpdateFailed(
                name=entry['name'], host=host,
                reason=exception.message_of(exc)) from exc
        record(context, host, result)
    entry = driver_entry(context, host, name)
    entry['changes'] = changes(before, snapshot(context, host))
    driver_notifications.ended(context, 'update', host, entry['name'], entry,
                               image_id)
    return entry


def list_services(context, host=None, driver_name=None):
    """What each device offers; of one agent's host when ``host``."""
    if host is not None:
        check_host(context, host)
    return services(context, host, driver_name)


def discover(context, host, agent_api):
    """Have one agent (or every one) discover now; what changed."""
    if host is not None:
        check_host(context, host)
    hosts = [host] if host else agent_hosts(context)
    # NOTE(conductor): agents discover in parallel, so asking every
    # host takes as long as the slowest, not the sum.
    with futures.ThreadPoolExecutor(
            max_workers=max(1, min(16, len(hosts)))) as pool:
        return list(pool.map(
            lambda name: _discover_one(context, name, agent_api), hosts))


def _discover_one(context, host, agent_api):
    before = snapshot(context, host)
    entry = {'host': host, 'error': None}
    try:
        agent_rpcapi.reached(host, agent_api.discover, context, host)
    except exception.CyborgException as exc:
        entry['error'] = exception.message_of(exc)
    entry.update(changes(before, snapshot(context, host)))
    return entry
