"""Why a device profile can or cannot be scheduled: each deployable judged."""

# NOTE(explain): Placement is asked exactly what Nova's scheduler asks
# for each request group of the profile (GET /allocation_candidates with
# the group's resources and required traits, and the caller's member_of),
# and Cyborg's own state says why a deployable Placement does not offer,
# or should not be given, cannot serve. The checks run in REASONS order
# and the first that fails is the one reported: the hardware's fit
# (resource class, traits) before its state (health, drain, status,
# scrub, agent) before what is left of it (capacity) before the caller's
# own quota; the state checks are the one rule of binds
# (states.refuses_binds) that Placement and the bind follow too.
# Placement is read, never written. After the deployables come
# the devices that have none, each with the reason its driver gave.

from oslo_log import log as logging
from oslo_utils import uuidutils

from cyborg import exception
from cyborg import states
from cyborg.clients import placement as placement_client
from cyborg.conductor import inventory
from cyborg.conductor import quota
from cyborg.db import candidates as candidate_db
from cyborg.db import quota_usage
from cyborg.objects import device_profile as profile_obj
from cyborg.objects import service as service_obj

LOG = logging.getLogger(__name__)

RESOURCE_CLASS = 'resource_class'
TRAIT_MISSING = 'trait_missing'
TRAIT_FORBIDDEN = 'trait_forbidden'
HEALTH_FAILED = 'health_failed'
DRAINING = 'draining'
NOT_READY = 'device_not_ready'
CLEANING = 'cleaning'
AGENT_DOWN = 'agent_down'
NO_CAPACITY = 'no_capacity'
QUOTA = 'quota_exhausted'
NOT_OFFERED = 'not_offered'
#: A device with no deployable at all; its detail is the device's offer
#: reason. Not a check of a deployable: it comes after them.
OFFERS_NOTHING = 'device_offers_nothing'
#: Every reason, in the order the checks run.
REASONS = (RESOURCE_CLASS, TRAIT_MISSING, TRAIT_FORBIDDEN, HEALTH_FAILED,
           DRAINING, NOT_READY, CLEANING, AGENT_DOWN, NO_CAPACITY, QUOTA,
           NOT_OFFERED, OFFERS_NOTHING)
#: The detail of a device that offers nothing and whose agent gave no
#: reason (an agent older than offer reasons has not reported since).
_NO_OFFER_REASON = ('it has no deployable, and its agent has not said why '
                    '(an agent older than offer reasons)')

_TRAIT = 'trait:'
_FORBIDDEN = 'forbidden'


def _request(group):
    """(resources {class: amount}, required [trait or !trait])."""
    resources = quota_usage.group_demand(group)
    required = []
    for key, value in sorted(group.items()):
        if key.startswith(_TRAIT):
            name = key[len(_TRAIT):].strip()
            required.append(('!' + name) if str(value).strip().lower() ==
                            _FORBIDDEN else name)
    return resources, required


def _profile(context, uuid_or_name):
    if uuidutils.is_uuid_like(uuid_or_name):
        return profile_obj.DeviceProfile.get(context, uuid_or_name)
    return profile_obj.DeviceProfile.get_by_name(context, uuid_or_name)


class _Placement:
    """Placement's readings of one explanation, each read once."""

    def __init__(self, client):
        self.client = client
        self._traits = {}
        self._free = {}

    def traits(self, rp_uuid):
        if rp_uuid not in self._traits:
            self._traits[rp_uuid] = self.client.get_traits(rp_uuid)[1]
        return self._traits[rp_uuid]

    def capacity(self, rp_uuid, resource_class):
        """(used, total, reserved) of one class on a provider."""
        if rp_uuid not in self._free:
            _generation, inventories = self.client.get_inventories(rp_uuid)
            self._free[rp_uuid] = (inventories,
                                   self.client.get_usages(rp_uuid))
        inventories, usages = self._free[rp_uuid]
        found = inventories.get(resource_class, {})
        return (usages.get(resource_class, 0), found.get('total', 0),
                found.get('reserved', 0))


def _agents(context):
    """{host: whether its agent is up}."""
    return {service.host: service.is_up for service in
            service_obj.Service.list(context, binary=inventory.AGENT_BINARY)}


def _quota(context, project_id, demand):
    """{resource class: the over-limit entry} of the caller's quota."""
    try:
        quota.check(context, project_id, demand)
    except exception.QuotaExceeded as exc:
        return {quota.resource_class(item['resource']): item
                for item in exc.kwargs['over']}
    return {}


#: The reason explain reports for each cause of ``states.refuses_binds``.
_REFUSED = {states.REFUSED_HEALTH: HEALTH_FAILED,
            states.REFUSED_DRAINING: DRAINING,
            states.REFUSED_STATUS: NOT_READY,
            states.REFUSED_CLEANING: CLEANING}


def _refused_detail(cause, dep):
    """The detail of a deployable that refuses binds, in the words the API
    has always given."""
    if cause == states.REFUSED_HEALTH:
        return dep['health_reason'] or 'health failed'
    if cause == states.REFUSED_DRAINING:
        return dep['status_reason'] or 'draining'
    if cause == states.REFUSED_STATUS:
        return 'its device is %s%s' % (
            dep['status'], ': %s' % dep['status_reason']
            if dep['status_reason'] else '')
    return 'it is being scrubbed for its next tenant'


def _judge(dep, resources, required, offered, readings, agents, over,
           member_of):
    """(reason, detail) of the first check the deployable fails, or
    (None, None) when it can serve the group."""
    rc = dep['resource_class']
    if rc not in resources:
        return RESOURCE_CLASS, 'it offers %s; the group asks for %s' % (
            rc or 'no resource class', ', '.join(sorted(resources)))
    rp = dep['rp_uuid']
    listed = rp in offered
    if rp and not listed:
        traits = readings.traits(rp)
        missing = [t for t in required
                   if not t.startswith('!') and t not in traits]
        if missing:
            return TRAIT_MISSING, 'it lacks %s' % ', '.join(missing)
        present = [t[1:] for t in required
                   if t.startswith('!') and t[1:] in traits]
        if present:
            return TRAIT_FORBIDDEN, 'it has %s' % ', '.join(present)
    refused = states.refuses_binds(dep['status'], dep['health'],
                                   dep['cleaning'])
    if refused is not None:
        return _REFUSED[refused.cause], _refused_detail(refused.cause, dep)
    if not agents.get(dep['hostname'], False):
        return AGENT_DOWN, 'the cyborg-agent of %s does not report' % (
            dep['hostname'])
    if rp and not listed:
        used, total, reserved = readings.capacity(rp, rc)
        if total - reserved - used < resources[rc]:
            return NO_CAPACITY, 'used %d of %d (%d reserved); the group ' \
                'asks for %d' % (used, total, reserved, resources[rc])
    if rc in over:
        entry = over[rc]
        return QUOTA, '%s: limit %d, the project uses %d and asks for %d' % (
            entry['resource'], entry['limit'], entry['usage'],
            entry['requested'])
    if not listed:
        return NOT_OFFERED, (
            'it has no resource provider in Placement yet' if not rp else
            'Placement offers no allocation on it for this group%s' % (
                ' (member_of=%s)' % member_of if member_of else ''))
    return None, None


def _offers_nothing(device):
    """The candidate entry of a device without a deployable."""
    return {'deployable_uuid': None, 'deployable_name': None,
            'device_uuid': device['uuid'], 'hostname': device['hostname'],
            'resource_class': None, 'rp_uuid': None, 'schedulable': False,
            'reason': OFFERS_NOTHING,
            'detail': device['offer_reason'] or _NO_OFFER_REASON}


def explain(context, uuid_or_name, project_id, member_of=None,
            client=None):
    """Every deployable judged for every request group of a profile.

    :returns: ``{device_profile: {uuid, name}, project_id, member_of,
        groups: [{group, resources, required, candidates: [...]}]}``,
        each candidate ``{deployable_uuid, deployable_name, device_uuid,
        hostname, resource_class, rp_uuid, schedulable, reason, detail}``;
        after the deployables, each device without one (its deployable
        fields, resource class and provider None, its reason
        ``device_offers_nothing``).
    :raises DeviceProfileNotFound: no such profile.
    :raises PlacementUnavailable: Placement cannot be asked.
    :raises QuotaUnavailable: Keystone's limits cannot be read.
    """
    profile = _profile(context, uuid_or_name)
    if client is None:
        if not placement_client.configured():
            raise exception.PlacementUnavailable(
                reason='[placement] is not configured on the conductor')
        client = placement_client.PlacementClient()
    readings = _Placement(client)
    deployables = candidate_db.deployables(context)
    unoffered = [_offers_nothing(device) for device in
                 candidate_db.devices_offering_nothing(context)]
    agents = _agents(context)
    demand = {}
    requests = []
    for group in profile.groups:
        resources, required = _request(group)
        requests.append((resources, required))
        for rc, amount in resources.items():
            demand[rc] = demand.get(rc, 0) + amount
    over = _quota(context, project_id, demand)
    groups = []
    for index, (resources, required) in enumerate(requests):
        offered = client.candidate_providers(
            resources, required, member_of) if resources else set()
        candidates = []
        for dep in deployables:
            reason, detail = _judge(dep, resources, required, offered,
                                    readings, agents, over, member_of)
            candidates.append({
                'deployable_uuid': dep['uuid'],
                'deployable_name': dep['name'],
                'device_uuid': dep['device_uuid'],
                'hostname': dep['hostname'],
                'resource_class': dep['resource_class'],
                'rp_uuid': dep['rp_uuid'], 'schedulable': reason is None,
                'reason': reason, 'detail': detail})
        candidates.extend(dict(entry) for entry in unoffered)
        groups.append({'group': index, 'resources': resources,
                       'required': required, 'candidates': candidates})
    LOG.debug('Explained device profile %s for project %s', profile.name,
              project_id)
    return {'device_profile': {'uuid': profile.uuid, 'name': profile.name},
            'project_id': project_id, 'member_of': member_of,
            'groups': groups}
