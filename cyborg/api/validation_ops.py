"""JSON Schemas of /v1/accelerators and of the driver and service operations.
"""

from cyborg import exception
from cyborg.api import validation

_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}

SPEC_PROPERTIES = {
    'remote': {'type': 'integer', 'enum': [0, 1]},
    'num': {'type': 'integer', 'minimum': 1, 'maximum': validation.MAX_INT},
    'device_type': {'type': ['string', 'null'], 'maxLength': 30,
                    'pattern': '^[A-Za-z][A-Za-z0-9_]*$'},
    'acc_capability': {'type': 'object', 'maxProperties': 64,
                       'propertyNames': {'maxLength': 255}},
}

ACCELERATOR_POST = {
    'type': 'object',
    'properties': {'name': _NAME, 'uuid': validation.UUID},
    'required': ['name'],
    'additionalProperties': False,
}

ACC_SPECS_PUT = {
    'type': 'object',
    'properties': {'acc_specs': {
        'type': 'object', 'properties': SPEC_PROPERTIES,
        'additionalProperties': False}},
    'required': ['acc_specs'],
    'additionalProperties': False,
}

ATTACH = {
    'type': 'object',
    'properties': {'instance_uuid': validation.UUID, 'host': _NAME,
                   # NOTE(v1): the proposal's example body names the
                   # accelerator; accepted when it is this one.
                   'name': _NAME, 'uuid': validation.UUID},
    'oneOf': [{'required': ['instance_uuid']}, {'required': ['host']}],
    'additionalProperties': False,
}

DRIVER_INSTALL = {
    'type': 'object',
    'properties': {'host': _NAME, 'name': _NAME},
    'required': ['host', 'name'],
    'additionalProperties': False,
}

DRIVER_UPDATE = {
    'type': 'object',
    'properties': {'image_uuid': validation.UUID},
    'additionalProperties': False,
}

DISCOVER = {
    'type': 'object',
    'properties': {'host': _NAME},
    'additionalProperties': False,
}


def spec_put(key, body):
    """``(key or None, value)`` of a spec update: the whole spec under
    ``acc_specs``, or one key of it."""
    if key == 'acc_specs':
        validation.validate(ACC_SPECS_PUT, body)
        return None, body['acc_specs']
    if key not in SPEC_PROPERTIES:
        raise exception.NotFound(
            'Accelerators have no spec %r; use acc_specs or one of %s'
            % (key, ', '.join(SPEC_PROPERTIES)))
    validation.validate({'type': 'object',
                         'properties': {key: SPEC_PROPERTIES[key]},
                         'required': [key], 'additionalProperties': False},
                        body)
    return key, body[key]


def attach(body):
    """The body of an attach, checked: ``instance_uuid`` or ``host``."""
    if isinstance(body, dict) and 'instance_uuid' in body and 'host' in body:
        raise exception.Invalid(reason='attach to an instance '
                                       '(instance_uuid) or to a host (host), '
                                       'not both')
    validation.validate(ATTACH, body)
    return body


def check_names(body, current):
    """An attach body that names the accelerator must name this one."""
    for field in ('uuid', 'name'):
        if field in body and body[field] != current[field]:
            raise exception.Invalid(
                reason='the body names %s %r, not this accelerator (%r)'
                % (field, body[field], current[field]))
