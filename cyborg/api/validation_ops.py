"""JSON Schemas of /v1/accelerators and of the driver and service operations.
"""

from oslo_utils import uuidutils

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
    'properties': {'name': _NAME, 'uuid': {'type': 'string'}},
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
    'properties': {'instance_uuid': {'type': 'string'}, 'host': _NAME,
                   # NOTE(v1): the proposal's example body names the
                   # accelerator; accepted when it is this one.
                   'name': _NAME, 'uuid': {'type': 'string'}},
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
    'properties': {'image_uuid': {'type': 'string'}},
    'additionalProperties': False,
}

DISCOVER = {
    'type': 'object',
    'properties': {'host': _NAME},
    'additionalProperties': False,
}


def _uuid(value, what):
    if not uuidutils.is_uuid_like(value):
        raise exception.Invalid(reason='%s must be a UUID, not %r'
                                % (what, value))
    return value


def accelerator_post(body):
    """``(name, uuid or None)`` of a create."""
    validation.validate(ACCELERATOR_POST, body)
    uuid = body.get('uuid')
    return body['name'], _uuid(uuid, 'uuid') if uuid is not None else None


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


def attach(body, current):
    """``(instance_uuid, host)`` of an attach, one of them None.

    :param current: the accelerator, to check a body that names it.
    """
    if isinstance(body, dict) and 'instance_uuid' in body and 'host' in body:
        raise exception.Invalid(reason='attach to an instance '
                                       '(instance_uuid) or to a host (host), '
                                       'not both')
    validation.validate(ATTACH, body)
    for field in ('uuid', 'name'):
        if field in body and body[field] != current[field]:
            raise exception.Invalid(
                reason='the body names %s %r, not this accelerator (%r)'
                % (field, body[field], current[field]))
    instance = body.get('instance_uuid')
    if instance is not None:
        _uuid(instance, 'instance_uuid')
    return instance, body.get('host')


def optional(schema, body):
    """A body that may be empty (no body at all is ``{}``)."""
    body = {} if body is None else body
    validation.validate(schema, body)
    return body


def image_uuid(body):
    image = optional(DRIVER_UPDATE, body).get('image_uuid')
    return _uuid(image, 'image_uuid') if image is not None else None
