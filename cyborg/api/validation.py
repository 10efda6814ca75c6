"""JSON Schemas of request bodies, and the value rules they cannot express."""

import collections
import functools
import re

import jsonschema
import os_resource_classes
import os_traits
from oslo_utils import uuidutils

from cyborg import exception
from cyborg.api import microversion
from cyborg.objects import attribute as attribute_obj

# NOTE(validation): WSME types (cyborg/api/types) say what each body holds;
# these schemas, checked first, also say which values are valid, so that a
# bad body gets a 400 naming where it is wrong.

RESOURCES = 'resources:'
TRAIT = 'trait:'
ACCEL = 'accel:'
BITSTREAM_ID = 'accel:bitstream_id'
FUNCTION_ID = 'accel:function_id'
TRAIT_VALUES = ('required', 'forbidden')

_CUSTOM = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
_MAX_NAME = 255

#: The resource classes Cyborg's devices provide, as upstream lists them.
ACCELERATOR_CLASSES = ('FPGA', 'GPU', 'VGPU', 'PGPU', 'CUSTOM_QAT',
                       'CUSTOM_NIC', 'CUSTOM_SSD')

# NOTE(validation): "format": "uuid" takes what the rest of the API takes as
# a UUID (oslo.utils' is_uuid_like: with or without dashes, any case).
FORMAT_CHECKER = jsonschema.FormatChecker(())


@FORMAT_CHECKER.checks('uuid')
def _is_uuid(value):
    return not isinstance(value, str) or uuidutils.is_uuid_like(value)


UUID = {'type': 'string', 'format': 'uuid'}

_GROUP = {
    'type': 'object',
    'minProperties': 1,
    # NOTE(validation): whitespace around the prefix's name is allowed and
    # stripped ("resources: FPGA" is stored as "resources:FPGA").
    'propertyNames': {'pattern': r'^\s*(resources|trait|accel):\s*\S'},
    'additionalProperties': {'type': 'string', 'maxLength': 255},
}

_DEVICE_PROFILE = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': r'^[a-zA-Z0-9-_]+\Z',
                 'maxLength': 255},
        'description': {'type': ['string', 'null'], 'maxLength': 255},
        'uuid': UUID,
        'groups': {'type': 'array', 'minItems': 1, 'items': _GROUP},
    },
    'required': ['name', 'groups'],
    'additionalProperties': False,
}

#: POST /v2/device_profiles: a list of exactly one profile (as every
#: client sends it); a bare profile object is taken too.
DEVICE_PROFILE_POST = {
    'oneOf': [
        {'type': 'array', 'minItems': 1, 'maxItems': 1,
         'items': _DEVICE_PROFILE},
        _DEVICE_PROFILE,
    ],
}


def _where(error):
    path = '/'.join(str(part) for part in error.absolute_path)
    return ' at /%s' % path if path else ''


def validate(schema, document):
    """Check ``document``; the first error becomes a 400 naming where."""
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document),
                    key=lambda e: len(e.absolute_path))
    if not errors:
        return
    error = errors[0]
    if error.validator == 'oneOf' and error.context:
        # NOTE(validation): say what is wrong with the closest alternative
        # rather than that no alternative matched.
        error = max(error.context, key=lambda e: len(e.absolute_path))
    raise exception.InvalidBody(reason='%s%s' % (error.message,
                                                 _where(error)))


@functools.cache
def _standard_traits():
    return frozenset(os_traits.get_traits())


def is_trait(name):
    """A standard trait (os-traits) or a well-formed CUSTOM_ one."""
    return bool(_CUSTOM.match(name)) or name in _standard_traits()


def _is_custom(name):
    return bool(_CUSTOM.match(name))


def _is_accelerator_class(name):
    return name in ACCELERATOR_CLASSES or _is_custom(name)


def _is_resource_class(name):
    return name in os_resource_classes.STANDARDS or _is_custom(name)


#: What a device-profile group may name: ``trait`` and ``resource_class``
#: test a name, ``traits``/``classes`` say what they take (for messages).
GroupRules = collections.namedtuple(
    'GroupRules', 'trait traits resource_class classes')

# NOTE(validation): up to 2.3 as upstream: CUSTOM_ traits only, and only the
# classes accelerators provide. From 2.4 a profile may also name standard
# traits (OWNER_CYBORG...) and standard resource classes.
GROUP_RULES = microversion.ByVersion({
    '2.0': GroupRules(
        _is_custom, 'CUSTOM_ with A-Z, 0-9 and _', _is_accelerator_class,
        'one of %s, or CUSTOM_ with A-Z, 0-9 and _'
        % ', '.join(ACCELERATOR_CLASSES)),
    '2.4': GroupRules(
        is_trait, 'a standard one or CUSTOM_ with A-Z, 0-9 and _',
        _is_resource_class,
        'a standard one or CUSTOM_ with A-Z, 0-9 and _'),
})


#: The largest integer a query or a group may carry (a 32-bit column).
MAX_INT = 2 ** 31 - 1


def positive_int(text, maximum=MAX_INT):
    """``text`` as an int in 1..maximum, or None when it is not one.

    Only ASCII digits count: str.isdigit() also takes "²", which int()
    refuses.
    """
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    # NOTE(validation): int() refuses more than 4300 digits; anything
    # past 19 is out of range anyway.
    if len(text.lstrip('0')) > 19:
        return None
    value = int(text)
    return value if 0 < value <= maximum else None


def _positive(value):
    return positive_int(value) is not None


def normalize_group(index, group, rules=None):
    """A device-profile group with its keys stripped, or a 400 saying why.

    Which traits and resource classes it may name follows the microversion
    (``GROUP_RULES``, or ``rules``); amounts must be positive integers; a
    group asks for at least one resource and names at most one of bitstream
    and function.
    """
    rules = GROUP_RULES() if rules is None else rules
    where = 'group %d' % index
    result = {}
    for key, value in group.items():
        key = re.sub(r'\s+', '', key)
        value = value.strip()
        if key.startswith(RESOURCES):
            rc = key[len(RESOURCES):]
            if not rules.resource_class(rc) or len(rc) > _MAX_NAME:
                raise exception.Invalid(
                    reason='%s: %r is not a resource class a device '
                           'profile may ask for (%s)'
                           % (where, rc, rules.classes))
            if not _positive(value):
                raise exception.Invalid(
                    reason='%s: the amount of %s must be a positive '
                           'integer, not %r' % (where, rc, value))
        elif key.startswith(TRAIT):
            trait = key[len(TRAIT):]
            if not rules.trait(trait) or len(trait) > _MAX_NAME:
                raise exception.Invalid(
                    reason='%s: %r is not a trait a device profile may '
                           'ask for (%s)' % (where, trait, rules.traits))
            if value not in TRAIT_VALUES:
                raise exception.Invalid(
                    reason='%s: trait %s must be required or forbidden, '
                           'not %r' % (where, trait, value))
        elif key == BITSTREAM_ID and not uuidutils.is_uuid_like(value):
            raise exception.Invalid(
                reason='%s: accel:bitstream_id must be an image UUID'
                       % where)
        if key in result:
            raise exception.Invalid(reason='%s: %s is given twice'
                                    % (where, key))
        result[key] = value
    if not any(key.startswith(RESOURCES) for key in result):
        raise exception.Invalid(
            reason='%s asks for no resource (resources:<CLASS>)' % where)
    if BITSTREAM_ID in result and FUNCTION_ID in result:
        raise exception.Invalid(
            reason='%s names both accel:bitstream_id and accel:function_id'
                   % where)
    return result


def device_profile(profile):
    """The fields of a new profile (a dict of the POST body's one profile,
    already checked against DEVICE_PROFILE_POST), groups normalised."""
    profile = dict(profile)
    profile['groups'] = [normalize_group(index, group)
                         for index, group in enumerate(profile['groups'])]
    return profile


#: POST /v2/accelerator_requests. python-cyborgclient also sends
#: device_profile_group_id and image_uuid (usually null); upstream ignores
#: them, and so does this API. An empty or unknown name is a profile that
#: does not exist (404), as upstream answers it.
ARQ_CREATE = {
    'type': 'object',
    'properties': {
        'device_profile_name': {'type': 'string', 'maxLength': 255},
        'device_profile_group_id': {'type': ['integer', 'null']},
        'image_uuid': {'type': ['string', 'null']},
    },
    'required': ['device_profile_name'],
    'additionalProperties': False,
}

_BIND_PATHS = ('/hostname', '/device_rp_uuid', '/instance_uuid')
PROJECT_PATH = '/project_id'
_PATCH_OP = {
    'type': 'object',
    'properties': {
        'op': {'enum': ['add', 'remove']},
        'path': {'enum': list(_BIND_PATHS) + [PROJECT_PATH]},
        'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['op', 'path'],
    'additionalProperties': False,
}

#: PATCH /v2/accelerator_requests: ARQ uuid -> JSON-patch operations.
ARQ_PATCH = {
    'type': 'object',
    'minProperties': 1,
    'propertyNames': UUID,
    'additionalProperties': {'type': 'array', 'minItems': 1,
                             'items': _PATCH_OP},
}

#: The paths a bind may set at each microversion.
PATCH_PATHS = microversion.ByVersion({
    '2.0': _BIND_PATHS,
    '2.1': _BIND_PATHS + (PROJECT_PATH,),
})


def arq_patch(body):
    """``('add', {uuid: binding})`` or ``('remove', [uuids])``.

    Every ARQ of one request is bound, or every one unbound: ``add`` sets
    hostname, device_rp_uuid and instance_uuid (and project_id from 2.1),
    each once; ``remove`` names the same paths without values.

    :param body: the JSON body, already checked against ARQ_PATCH.
    :raises NotAcceptableInMicroversion: /project_id before 2.1 (406).
    """
    ops = {op['op'] for patch in body.values() for op in patch}
    if len(ops) != 1:
        raise exception.Invalid(reason='one request either binds (add) or '
                                       'unbinds (remove) every ARQ it names')
    (op,) = ops
    allowed = PATCH_PATHS()
    bindings = {}
    for uuid, patch in body.items():
        paths = [item['path'] for item in patch]
        if len(set(paths)) != len(paths):
            raise exception.Invalid(reason='ARQ %s: a path is given twice'
                                    % uuid)
        if PROJECT_PATH in paths and PROJECT_PATH not in allowed:
            raise exception.NotAcceptableInMicroversion(
                what='Setting %s in an accelerator request' % PROJECT_PATH,
                since='2.1', version=microversion.current())
        if set(_BIND_PATHS) - set(paths):
            raise exception.Invalid(
                reason='ARQ %s: %s needs %s' % (uuid, op,
                                                ', '.join(_BIND_PATHS)))
        if op == 'remove':
            if any('value' in item for item in patch):
                raise exception.Invalid(reason='ARQ %s: remove takes no '
                                               'value' % uuid)
            continue
        values = {}
        for item in patch:
            if 'value' not in item:
                raise exception.Invalid(reason='ARQ %s: add %s needs a '
                                               'value' % (uuid, item['path']))
            values[item['path'][1:]] = item['value']
        for key in ('device_rp_uuid', 'instance_uuid'):
            if not uuidutils.is_uuid_like(values[key]):
                raise exception.Invalid(reason='ARQ %s: %s must be a UUID'
                                        % (uuid, key))
        bindings[uuid] = values
    if op == 'remove':
        return op, sorted(body)
    return op, bindings


#: POST /v2/attributes.
ATTRIBUTE_POST = {
    'type': 'object',
    'properties': {
        # NOTE(attributes): openstacksdk's Attribute, and so the openstack
        # CLI, sends the deployable the user named as a string: its id's
        # digits or its uuid. Both were a 400; they are taken at every
        # microversion, as an integer id always was.
        'deployable_id': {'anyOf': [
            {'type': 'integer', 'minimum': 1, 'maximum': 2 ** 31 - 1},
            {'type': 'string', 'pattern': r'^[1-9][0-9]{0,9}\Z'},
            UUID]},
        'key': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                'pattern': r'^\S(.*\S)?\Z'},
        'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['deployable_id', 'key', 'value'],
    'additionalProperties': False,
}

#: From 2.4 the deployable may be named by its uuid instead of its id.
ATTRIBUTE_POST_2_4 = dict(ATTRIBUTE_POST, properties=dict(
    ATTRIBUTE_POST['properties'], deployable_uuid=UUID),
    required=['key', 'value'],
    oneOf=[{'required': ['deployable_id']},
           {'required': ['deployable_uuid']}])

ATTRIBUTE_POSTS = microversion.ByVersion({'2.0': ATTRIBUTE_POST,
                                          '2.4': ATTRIBUTE_POST_2_4})


def attribute(body):
    """The fields of a new attribute (checked against ATTRIBUTE_POSTS); a
    trait key needs a trait value."""
    if attribute_obj.is_trait_key(body['key']) and \
            not is_trait(body['value']):
        raise exception.Invalid(
            reason='attribute %s names a trait: %r is neither a standard '
                   'trait nor CUSTOM_ with A-Z, 0-9 and _' %
                   (body['key'], body['value']))
    return body


#: PATCH /v2/deployables/{uuid}/program.
PROGRAM_PATCH = {
    'type': 'array',
    'minItems': 1,
    'maxItems': 1,
    'items': {
        'type': 'object',
        'properties': {
            'op': {'const': 'replace'},
            'path': {'const': '/program'},
            'value': {
                'type': 'array', 'minItems': 1, 'maxItems': 1,
                'items': {
                    'type': 'object',
                    'properties': {'image_uuid': UUID},
                    'required': ['image_uuid'],
                    'additionalProperties': False,
                },
            },
        },
        'required': ['op', 'path', 'value'],
        'additionalProperties': False,
    },
}


def program_patch(body):
    """The Glance image id a program PATCH (checked against PROGRAM_PATCH)
    names."""
    return body[0]['value'][0]['image_uuid']


_IN = 'in:'


def member_of(value):
    """A Placement ``member_of`` aggregate query: one aggregate uuid, or
    ``in:`` and a comma-separated list of them; returned normalised."""
    text = value.strip()
    listed = text[len(_IN):] if text.startswith(_IN) else text
    uuids = [item.strip() for item in listed.split(',')]
    if not all(_is_uuid(item) for item in uuids) or (
            len(uuids) > 1 and not text.startswith(_IN)):
        raise exception.Invalid(
            reason='member_of takes an aggregate uuid, or "in:" and '
                   'aggregate uuids separated by commas, not %r' % value)
    return (_IN if text.startswith(_IN) else '') + ','.join(uuids)


#: POST /v2/devices/{uuid}/mode.
DEVICE_MODE = {
    'type': 'object',
    'properties': {'mode': {'type': 'string', 'minLength': 1,
                            'maxLength': 255}},
    'required': ['mode'],
    'additionalProperties': False,
}
