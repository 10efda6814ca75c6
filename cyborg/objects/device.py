"""Device: a physical accelerator card on one host."""

from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base

from cyborg import states
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Device(base.CrudMixin, base.CyborgObject,
             base.CyborgPersistentObject, ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    # Version 1.1: services, status_reason
    # Version 1.2: list_view
    # Version 1.3: health, health_reason, health_sources; health_details;
    #              status draining
    # Version 1.4: mode, modes
    # Version 1.5: offer_reason
    VERSION = '1.5'

    _resource = 'devices'
    _json_fields = ('services', 'health_sources', 'modes')
    _fields_since = {(1, 1): ('services', 'status_reason'),
                     (1, 3): ('health', 'health_reason', 'health_sources'),
                     (1, 4): ('mode', 'modes'),
                     (1, 5): ('offer_reason',)}
    _methods_since = {'list_view': (1, 2), 'health_details': (1, 3)}
    _older_forms = {'list_view': '_list_view_by_list',
                    'health_details': '_no_health_details'}
    #: The columns of ``list_view``, in its order.
    VIEW_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                   'vendor_board_info', 'hostname', 'status',
                   'status_reason', 'services', 'created_at', 'updated_at',
                   'health', 'health_reason', 'health_sources', 'mode',
                   'modes', 'offer_reason')
    #: The service whose heartbeats say when a device was last checked.
    AGENT_BINARY = 'cyborg-agent'

    fields = {
        'id': fields.IntegerField(nullable=False),
        'uuid': fields.UUIDField(nullable=False),
        'type': fields.DeviceTypeField(nullable=False),
        'vendor': fields.StringField(nullable=False),
        'model': fields.StringField(nullable=False),
        'std_board_info': fields.StringField(nullable=True),
        'vendor_board_info': fields.StringField(nullable=True),
        'hostname': fields.StringField(nullable=False),
        'status': fields.DeviceStatusField(nullable=False),
        'driver_name': fields.StringField(nullable=True),
        'services': fields.ListOfStringsField(nullable=False, default=[]),
        'status_reason': fields.StringField(nullable=True),
        'health': fields.StringField(nullable=True),
        'health_reason': fields.StringField(nullable=True),
        'health_sources': fields.ListOfStringsField(nullable=False,
                                                    default=[]),
        # NOTE(objects): the partition mode (a GPU: passthrough,
        # vgpu:<type>, sriov-vgpu:<type>) and those it offers.
        'mode': fields.StringField(nullable=True),
        'modes': fields.ListOfStringsField(nullable=False, default=[]),
        # NOTE(objects): why the device offers nothing, as its driver
        # says; None when it offers something.
        'offer_reason': fields.StringField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if (versionutils.convert_version_to_tuple(target_version) < (1, 3)
                and primitive.get('status') == states.DEVICE_DRAINING):
            # NOTE(objects): a draining device takes no new bind, as one in
            # maintenance; older readers know no other name for it.
            primitive['status'] = states.DEVICE_MAINTAINING

    @ovo_base.remotable_classmethod
    def list_view(cls, context, filters=None, limit=None, marker=None,
                  sort_key='id', sort_dir='asc'):
        """What ``list`` selects, as ``{'fields': [names], 'rows': JSON
        text of one list of values per device}``: no object is built, sent
        or read back for each of thousands of rows."""
        return cls.listings.devices(
            context, filters=filters, limit=limit, marker=marker,
            sort_key=sort_key, sort_dir=sort_dir)

    @classmethod
    def _list_view_by_list(cls, context, **query):
        # NOTE(objects): conductors older than Device 1.2 have no list view;
        # their objects make the same rows.
        # Device 1.2 has no health fields, which the API then leaves out.
        newer = [name for since, names in cls._fields_since.items()
                 if since >= (1, 3) for name in names]
        return base.view_rows(cls.list(context, **query), [
            name for name in cls.VIEW_FIELDS if name not in newer])

    @ovo_base.remotable_classmethod
    def health_details(cls, context, hostnames=None):
        """What devices' health shows beyond their fields: ``{'checked':
        {hostname: when its agent last checked (UTC text)}, 'affected':
        {device uuid: uuids of the ARQs bound to the device}}`` of the
        failed and draining devices.

        :param hostnames: the hosts of the devices shown; None: all.
        """
        return cls.dbapi.device_health.details(
            context, cls.AGENT_BINARY,
            hostnames=None if hostnames is None else list(hostnames))

    @classmethod
    def _no_health_details(cls, context, hostnames=None):
        # NOTE(objects): conductors older than Device 1.3 record no health.
        return {'checked': {}, 'affected': {}}
