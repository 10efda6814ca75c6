"""Field types of Cyborg's objects (oslo.versionedobjects plus enums)."""

from oslo_versionedobjects import fields

from cyborg import states

BooleanField = fields.BooleanField
DateTimeField = fields.DateTimeField
DictOfStringsField = fields.DictOfStringsField
FloatField = fields.FloatField
IntegerField = fields.IntegerField
ListOfDictOfNullableStringsField = fields.ListOfDictOfNullableStringsField
ListOfStringsField = fields.ListOfStringsField
StringField = fields.StringField
UUIDField = fields.UUIDField


class DeviceStatus(fields.Enum):
    def __init__(self, **kwargs):
        super().__init__(valid_values=states.DEVICE_STATES, **kwargs)


class DeviceStatusField(fields.BaseEnumField):
    AUTO_TYPE = DeviceStatus()


class DeviceType(fields.Enum):
    def __init__(self, **kwargs):
        super().__init__(valid_values=states.DEVICE_TYPES, **kwargs)


class DeviceTypeField(fields.BaseEnumField):
    AUTO_TYPE = DeviceType()


class AttachHandleType(fields.Enum):
    def __init__(self, **kwargs):
        super().__init__(valid_values=states.ATTACH_HANDLE_TYPES, **kwargs)


class AttachHandleTypeField(fields.BaseEnumField):
    AUTO_TYPE = AttachHandleType()


class ARQState(fields.Enum):
    def __init__(self, **kwargs):
        super().__init__(valid_values=states.ARQ_STATES, **kwargs)


class ARQStateField(fields.BaseEnumField):
    AUTO_TYPE = ARQState()


DictOfNullableStringsField = fields.DictOfNullableStringsField


class JSONDict(fields.FieldType):
    """A dict whose values may be anything JSON holds (nested included)."""

    @staticmethod
    def coerce(obj, attr, value):
        if not isinstance(value, dict):
            raise ValueError('A dict is required in field %s, not a %s'
                             % (attr, type(value).__name__))
        return dict(value)


class FlexibleDictField(fields.AutoTypedField):
    AUTO_TYPE = JSONDict()
