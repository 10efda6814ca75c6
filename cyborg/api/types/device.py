"""The Device resource as the API shows it."""

import collections

import wsme.types as wtypes

from cyborg import policy
from cyborg import states
from cyborg.api import microversion
from cyborg.api.types import base
from cyborg.api.types import link
from cyborg.policies import arq as arq_policies

RESOURCE = 'devices'

#: What a microversion shows of a device: how its status reads (None: not
#: shown), whether the lifecycle fields (status_reason, services) are,
#: whether the health fields and the mode fields are, and whether
#: status_reason, when the status gives no reason, says why the device
#: offers nothing (2.10).
View = collections.namedtuple('View',
                              'status lifecycle health modes offers',
                              defaults=(False, False, False))
#: The fields of a device's health (2.6).
HEALTH_FIELDS = ('health', 'health_reason', 'health_sources',
                 'health_checked_at', 'affected_arqs')
#: The fields of a device's partition mode (2.9).
MODE_FIELDS = ('mode', 'modes')
#: Most hosts a list names when it asks for their devices' health details;
#: beyond, it asks for every host's.
_MOST_HOSTS = 500

#: Upstream's two values, which clients written for 2.3 compare against.
UPSTREAM_ENABLED = 'enabled'
UPSTREAM_MAINTAINING = 'maintaining'


def upstream_status(status):
    """A lifecycle status as 2.3 names it: enabled when ready, else
    maintaining (inactive, activating, error and lost devices cannot be
    scheduled either)."""
    if status == states.DEVICE_READY:
        return UPSTREAM_ENABLED
    return UPSTREAM_MAINTAINING


def _lifecycle_status(status):
    # NOTE(devices): 2.4 and 2.5 knew no draining; it takes no new bind,
    # as a device in maintenance.
    if status == states.DEVICE_DRAINING:
        return states.DEVICE_MAINTAINING
    return status


def _status_2_6(status):
    return status


VIEWS = microversion.ByVersion({
    '2.0': View(status=None, lifecycle=False),
    '2.3': View(status=upstream_status, lifecycle=False),
    '2.4': View(status=_lifecycle_status, lifecycle=True),
    '2.6': View(status=_status_2_6, lifecycle=True, health=True),
    '2.9': View(status=_status_2_6, lifecycle=True, health=True,
                modes=True),
    '2.10': View(status=_status_2_6, lifecycle=True, health=True,
                 modes=True, offers=True),
})


def status_reason(reason, offer_reason, view):
    """A device's status_reason as ``view`` shows it.

    NOTE(devices): from 2.10 a device with no reason of its lifecycle's
    (maintenance, draining, a mode change...) shows why it offers nothing;
    the lifecycle's reason comes first, being what an operator did.
    """
    if view.offers and not reason:
        return offer_reason or None
    return reason


def health_details(context, device_cls, hostnames):
    """``Device.health_details`` of the hosts of the devices shown, their
    affected ARQs cut to those the caller may list."""
    hostnames = set(hostnames)
    details = device_cls.health_details(
        context, sorted(hostnames) if len(hostnames) <= _MOST_HOSTS
        else None)
    project = policy.reach(arq_policies.ALL_PROJECTS, context)
    if project is not None:
        # NOTE(api): a project manager sees every device, but only its
        # own project's ARQs. A conductor before this release names no
        # projects: then the caller sees none.
        owners = details.get('projects') or {}
        details = dict(details, affected={
            device: [uuid for uuid in found if owners.get(uuid) == project]
            for device, found in details['affected'].items()})
    return details


def _health(item, details):
    """The health fields of one device (a dict of its fields)."""
    sources = list(item.get('health_sources') or [])
    checked = details['checked'].get(item['hostname']) if sources else None
    return {'health': item.get('health') or states.HEALTH_UNKNOWN,
            'health_reason': item.get('health_reason'),
            'health_sources': sources,
            'health_checked_at': base.timestamp_text(checked),
            'affected_arqs': list(details['affected'].get(item['uuid'],
                                                          []))}


class Device(base.APIBase):
    """A physical accelerator card on one host."""

    uuid = wtypes.text
    type = wtypes.text
    vendor = wtypes.text
    model = wtypes.text
    std_board_info = wtypes.text
    vendor_board_info = wtypes.text
    hostname = wtypes.text
    status = wtypes.text
    status_reason = wtypes.text
    services = [wtypes.text]
    health = wtypes.text
    health_reason = wtypes.text
    health_sources = [wtypes.text]
    health_checked_at = wtypes.text
    affected_arqs = [wtypes.text]
    mode = wtypes.text
    modes = [wtypes.text]
    links = wtypes.wsattr([link.Link], readonly=True)

    _wsme_attr_order = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                        'vendor_board_info', 'hostname', 'status',
                        'status_reason', 'services') + HEALTH_FIELDS + (
                        MODE_FIELDS) + ('created_at', 'updated_at', 'links')

    _object_fields = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                     'vendor_board_info', 'hostname')

    @classmethod
    def from_object(cls, obj, view=None, details=None):
        """The view of a Device object at the request's microversion (or
        ``view``, one of ``VIEWS``); fields a version does not show are
        absent, not null.

        :param details: ``health_details`` of its host, shown from 2.6.
        """
        view = VIEWS() if view is None else view
        extra = {'links': link.resource_links(RESOURCE, obj.uuid,
                                              bookmark=False)}
        if view.status is not None:
            extra['status'] = view.status(obj.status)
        if view.lifecycle:
            extra['status_reason'] = status_reason(
                obj.status_reason, obj.offer_reason if obj.obj_attr_is_set(
                    'offer_reason') else None, view)
            extra['services'] = list(obj.services)
        if view.health:
            extra.update(_health({
                name: getattr(obj, name) if obj.obj_attr_is_set(name)
                else None for name in ('uuid', 'hostname', 'health',
                                       'health_reason', 'health_sources')},
                details or {'checked': {}, 'affected': {}}))
        if view.modes:
            extra['mode'] = obj.mode if obj.obj_attr_is_set('mode') else None
            extra['modes'] = list(obj.modes) if obj.obj_attr_is_set(
                'modes') else []
        return super().from_object(obj, **extra)


def list_body(rows, view=None, details=None):
    """The body ``DeviceCollection`` renders at the request's microversion
    (or ``view``), built from the rows of ``Device.list_view`` without a
    WSME object per device.

    :param details: a callable that takes the hostnames of the devices
        listed and returns their ``health_details``; called from 2.6.
    """
    view = VIEWS() if view is None else view
    # NOTE(devices): the health columns come from the rows (a conductor
    # older than Device 1.3 lists none), the rest from ``details``.
    hidden = {'health_checked_at', 'affected_arqs'} | (
        set(HEALTH_FIELDS) - set(rows['fields']))
    if not view.health:
        hidden.update(HEALTH_FIELDS)
    if view.status is None:
        hidden.add('status')
    if not view.lifecycle:
        hidden.update(('status_reason', 'services'))
    if not view.modes:
        hidden.update(MODE_FIELDS)
    # NOTE(devices): a conductor older than Device 1.4 lists no modes.
    hidden.update(set(MODE_FIELDS) - set(rows['fields']))
    shown = [name for name in Device._wsme_attr_order[:-1]
             if name not in hidden]
    # NOTE(devices): a conductor older than Device 1.5 lists no offer
    # reasons; read along, they fold into status_reason.
    offers = view.offers and 'offer_reason' in rows['fields']
    items = list(base.view_items(
        rows, shown + ['offer_reason'] if offers else shown, RESOURCE,
        bookmark=False))
    if view.status is not None:
        for item in items:
            item['status'] = view.status(item['status'])
    if offers:
        for item in items:
            item['status_reason'] = status_reason(
                item['status_reason'], item.pop('offer_reason'), view)
    if view.health:
        found = details({item['hostname'] for item in items}) if (
            details and items) else {'checked': {}, 'affected': {}}
        order = [name for name in Device._wsme_attr_order
                 if name not in hidden or name in HEALTH_FIELDS]
        # NOTE(devices): in WSME's order, as get_one renders them.
        items = [{name: merged[name] for name in order if name in merged}
                 for merged in (dict(item, **_health(item, found))
                                for item in items)]
    return {'devices': items}


class DeviceCollection(wtypes.Base):
    """``{"devices": [...]}``."""

    devices = [Device]
    next = wtypes.text

    @classmethod
    def from_objects(cls, objs, next_link=None, view=None):
        return base.with_next(
            cls(devices=[Device.from_object(obj, view) for obj in objs]),
            next_link)
