"""Hypothesis strategies of requests to the whole API."""



import copy
import json
import urllib.parse

from hypothesis import strategies as st

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.test_arqs import MEMBER
from cyborg.tests.unit.api.test_arqs import NOVA
from cyborg.tests.unit.api.test_arqs import OTHER
from cyborg.tests.unit.api.test_arqs import URL
from cyborg.tests.unit.api.test_arqs import _bind_ops

MISSING = ('00000000-0000-0000-0000-000000000000',
           'b1946ac9-2c4e-4e5a-8c33-5a7f0e1f2d3c',
           '9b2f6e1a-0d3c-4f7a-8e5b-1c2d3e4f5a6b')
COLLECTIONS = ('devices', 'deployables', 'device_profiles',
               'accelerator_requests', 'attributes', 'agents')
# NOTE(tests): /v1/accelerators, and the /v2 collections of 2.5.
V1 = ('accelerators',)
V25 = ('drivers', 'services')
#: Every kind of id in the world, in the order ids['any'] lists them.
KINDS = COLLECTIONS + ('accelerators', 'drivers')
DRIVERS = ('fake_driver', 'pci_driver', 'generic_driver', 'fake', 'pci',
           'nvidia_gpu_driver', 'FAKE_DRIVER', 'nope_driver')
SPECS = ('acc_specs', 'remote', 'num', 'device_type', 'acc_capability')
METHODS = ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')
ACCELERATORS = '/v1/accelerators'
# NOTE(tests): MEMBER's project, with the role /v1 attaches need.
MANAGER = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'p-tenant',
           'X-User-Id': 'u-manager'}
UNBIND = [{'op': 'remove', 'path': p}
           for p in ('/hostname', '/device_rp_uuid', '/instance_uuid')]

_HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xff,
                                     blacklist_characters='\x7f'),
                       max_size=30)
_TEXT = st.text(max_size=30)
_LONG = st.builds(lambda n, c: c * n, st.integers(256, 6000),
                  st.sampled_from(['a', 'é', '1', '/']))
_WEIRD = st.sampled_from([
    '', ' ', '.', '..', '%', '%ff', '%00', '%2f', '%zz', '\x00', '\u202e',
    '\U0001f600', 'ＡＢＣ', '²', '١٢', '-1', '0', '1', '1e3', 'null', 'true',
    '[]', '{}', "'", '"', '\\', ';', ',', ',,', 'a,b', '*', '?', '#', '&',
    'NaN', 'Infinity', str(2 ** 63), str(-2 ** 63 - 1), '9' * 40,
    'resolved', 'latest', 'program', 'enable', 'disable', 'activate',
    'v2', 'v1', 'agents', 'healthcheck', 'accelerators', 'acc_specs',
    'drivers', 'services', 'discover'])


# --- Strategies --------------------------------------------------------------

def _weighted(*choices):
    """One of the strategies, as often as its weight says.

    st.one_of would not do: it flattens the one_ofs it is given into one
    list of branches and drops the repeated ones, so a group weighs what
    its number of branches does.
    """
    return st.sampled_from([strategy for strategy, weight in choices
                            for _ in range(weight)]).flatmap(lambda s: s)


def _scalars():
    return st.one_of(
        st.none(), st.booleans(), st.integers(),
        st.sampled_from([2 ** 31, 2 ** 63, -2 ** 63 - 1, 10 ** 30,
                         10 ** 400]),
        st.floats(allow_nan=True, allow_infinity=True), _TEXT, _WEIRD)


_JUNK = st.recursive(
    _scalars(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(_TEXT, st.sampled_from([
            'name', 'groups', 'uuid', 'description', 'device_profile_name',
            'op', 'path', 'value', 'image_uuid', 'deployable_id', 'key',
            'request', 'acc_specs', 'acc_spec', 'instance_uuid', 'host',
            'num', 'remote', 'device_type', 'acc_capability'])), inner,
            max_size=4)),
    max_leaves=12)


def _ids(world, kind):
    """Path ids and values: existing, missing, names, and junk."""
    own = world.ids.get(kind) or world.ids['any']
    existing = st.sampled_from(own)
    return st.one_of(
        existing, existing, existing,
        st.sampled_from(world.ids['any']),
        st.sampled_from(MISSING),
        st.uuids().map(str),
        existing.map(str.upper),
        existing.map(lambda u: u.replace('-', '')),
        existing.map(lambda u: '{%s}' % u),
        existing.map(lambda u: 'urn:uuid:' + u),
        existing.map(lambda u: u + ',' + u),
        st.sampled_from(world.ids['names']),
        _WEIRD, _TEXT, _LONG)


def _segment(world, kind):
    quoted = _ids(world, kind).map(
        lambda s: urllib.parse.quote(s, safe=''))
    raw = st.sampled_from(['%ff', '%', '%zz', '%2F', '..', '.', '',
                           'a%00b', ';x', '%c3%28', '%ed%a0%80'])
    return st.one_of(quoted, quoted, quoted, raw)


def _group(world):
    keys = st.sampled_from([
        'resources:FPGA', 'resources:GPU', 'resources:CUSTOM_QAT',
        'resources:fpga', 'resources:', ' resources:FPGA ',
        'trait:CUSTOM_FAKE_DEVICE', 'trait:OWNER_CYBORG', 'trait:custom_x',
        'trait:', 'accel:bitstream_id', 'accel:function_id', 'accel:x',
        'resource:FPGA', 'other'])
    values = st.one_of(st.sampled_from([
        '1', '2', '0', '-1', ' 3 ', '²', 'required', 'forbidden',
        'optional', 'fn-1', '']), st.sampled_from(world.ids['images']),
        _TEXT)
    return st.dictionaries(keys, values, min_size=1, max_size=4)


def _profile_body(world):
    profile = st.fixed_dictionaries(
        {'name': st.one_of(st.sampled_from(['fuzzed', 'two', 'a-b_C9']),
                           _WEIRD, _TEXT),
         'groups': st.lists(_group(world), min_size=1, max_size=3)},
        optional={'description': st.one_of(st.none(), _TEXT),
                  'uuid': st.one_of(st.sampled_from(MISSING),
                                    _ids(world, 'device_profiles'))})
    return st.one_of(profile.map(lambda p: [p]), profile,
                     st.lists(profile, min_size=2, max_size=3))


def _patch_ops(world):
    value = st.one_of(st.sampled_from(world.ids['rp_uuids']),
                      st.sampled_from(world.ids['instances']),
                      st.just('node1'), st.uuids().map(str), _TEXT)
    bind = st.builds(
        lambda rp, instance, host: _bind_ops(rp, instance, host),
        st.one_of(st.sampled_from(world.ids['rp_uuids']),
                  st.sampled_from(MISSING)),
        st.one_of(st.sampled_from(world.ids['instances']),
                  st.uuids().map(str)),
        st.sampled_from(['node1', 'other-host']))
    unbind = st.just(UNBIND)
    loose = st.lists(st.fixed_dictionaries(
        {'op': st.sampled_from(['add', 'remove', 'replace', 'test']),
         'path': st.sampled_from(['/hostname', '/device_rp_uuid',
                                  '/instance_uuid', '/project_id',
                                  '/state', '/'])},
        optional={'value': value}), min_size=1, max_size=5)
    return st.one_of(bind, bind, unbind, loose,
                     st.tuples(bind, st.sampled_from([
                         {'op': 'add', 'path': '/project_id',
                          'value': 'p-tenant'}])).map(
                         lambda t: t[0] + [t[1]]))


def _arq_patch_body(world):
    existing = st.sampled_from(world.ids['accelerator_requests'])
    return st.dictionaries(
        st.one_of(existing, existing, existing,
                  _ids(world, 'accelerator_requests')),
        _patch_ops(world), min_size=1, max_size=3)


def _program_body(world):
    image = st.one_of(st.sampled_from(world.ids['images']), _TEXT)
    return st.builds(
        lambda image: [{'path': '/program', 'op': 'replace',
                        'value': [{'image_uuid': image}]}], image)


def _attribute_body(world):
    deployable_id = st.one_of(st.sampled_from(world.ids['int_ids']),
                              st.integers())
    deployable_uuid = _ids(world, 'deployables')
    return st.fixed_dictionaries({
        'key': st.one_of(st.sampled_from(['rc', 'trait0', 'trait9',
                                          'owner', ' x']), _TEXT),
        'value': st.one_of(st.sampled_from(['FPGA', 'CUSTOM_FAKE_DEVICE',
                                            'CUSTOM_NEW', 'bad trait']),
                           _TEXT)},
        optional={'deployable_id': deployable_id,
                  'deployable_uuid': deployable_uuid})


def _accelerator_body(world):
    return st.fixed_dictionaries(
        {'name': st.one_of(st.sampled_from([
            'new-card', 'fuzz-card', 'fuzz-spare', 'node1_FakeDevice', 'x',
            'a' * 255, 'a' * 256]), st.sampled_from(world.ids['names']),
            _WEIRD, _TEXT)},
        optional={'uuid': st.one_of(st.sampled_from(MISSING),
                                    _ids(world, 'accelerators'))})


def _attach_body(world):
    target = st.one_of(
        st.fixed_dictionaries({'instance_uuid': st.one_of(
            st.sampled_from(world.ids['instances']), st.uuids().map(str),
            _ids(world, 'instances'))}),
        st.fixed_dictionaries({'host': st.one_of(
            st.sampled_from(['node1', 'node9', 'NODE1', '']), _TEXT)}))
    # NOTE(tests): the proposal's body names the accelerator too.
    named = st.fixed_dictionaries({}, optional={
        'name': st.sampled_from(world.ids['names']),
        'uuid': _ids(world, 'accelerators')})
    return st.builds(lambda t, n: dict(n, **t), target, named)


def _spec_values():
    return {
        'remote': st.one_of(st.sampled_from([0, 1, 2, -1, True, '1']),
                            _scalars()),
        'num': st.one_of(st.sampled_from([1, 2, 4, 16, 0, 2 ** 31 - 1,
                                          2 ** 31, 2 ** 63, 1.0]),
                         st.integers()),
        'device_type': st.one_of(st.sampled_from([
            'FPGA', 'CRYPTO', 'GPU', None, 'a b', '', '9x', 'A' * 31]),
            _TEXT),
        'acc_capability': st.one_of(
            st.sampled_from([{}, {'num': 2, 'ipsec': {'aes': {'3des': 50}}},
                             {'latency_us': 3}, {'num': 99},
                             {'k%d' % i: i for i in range(65)}]),
            st.dictionaries(_TEXT, _JUNK, max_size=4), _JUNK)}


def _spec_bodies():
    """Per path: ``{"acc_specs": {...}}`` or one key of the spec."""
    values = _spec_values()
    bodies = {key: st.builds(lambda v, key=key: {key: v}, value)
              for key, value in values.items()}
    bodies['acc_specs'] = st.fixed_dictionaries(
        {}, optional=values).map(lambda spec: {'acc_specs': spec})
    return bodies


def _shapes(world):
    """The valid-looking bodies of each collection, and of the routes of
    one collection whose bodies differ (named in ``body_routes``)."""
    specs = _spec_bodies()
    drivers = st.fixed_dictionaries(
        {'host': st.one_of(st.sampled_from(['node1', 'node9']), _TEXT),
         'name': st.one_of(st.sampled_from(world.ids['drivers']), _TEXT)})
    update = st.one_of(st.just({}), st.fixed_dictionaries({
        'image_uuid': st.one_of(st.sampled_from(world.ids['images']),
                                _TEXT)}))
    discover = st.one_of(st.just({}), st.fixed_dictionaries({
        'host': st.one_of(st.sampled_from(['node1', 'node9']), _TEXT)}))
    shapes = {
        'device_profiles': _profile_body(world),
        'accelerator_requests': st.one_of(
            st.fixed_dictionaries({'device_profile_name': st.one_of(
                st.sampled_from(['two', 'split', 'programmed', 'unused',
                                 'missing']), _TEXT)}),
            _arq_patch_body(world)),
        'deployables': _program_body(world),
        'attributes': _attribute_body(world),
        'accelerators': st.one_of(_accelerator_body(world),
                                  _attach_body(world),
                                  *specs.values()),
        'accelerator_create': _accelerator_body(world),
        'attach': _attach_body(world),
        'drivers': st.one_of(drivers, update),
        'driver_install': drivers,
        'driver_update': update,
        'services': discover,
    }
    shapes.update(('spec:' + key, body) for key, body in specs.items())
    return shapes


def _nodes(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nodes(child, path + (index,))


def _valid(world):
    """(method, url, body, headers) a client could mean: real ids, JSON
    bodies; the headers a route needs (its microversion, If-Match) or
    nothing."""
    ids = world.ids

    def pick(key):
        return st.sampled_from(ids[key])

    arqs = st.lists(pick('accelerator_requests'), min_size=1, max_size=3,
                    unique=True)
    instance = st.one_of(st.uuids().map(str), pick('instances'))
    bind = st.builds(lambda a, rp, i: {u: _bind_ops(rp, i) for u in a},
                     arqs, pick('rp_uuids'), instance)
    unbind = arqs.map(lambda a: {u: UNBIND for u in a})
    groups = st.lists(st.sampled_from([
        {'resources:FPGA': '1'},
        {'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required'},
        {'resources:FPGA': '1', 'accel:bitstream_id': ids['images'][0]},
        {'resources:FPGA': '1', 'accel:function_id': 'fn-1'}]),
        min_size=1, max_size=2)
    one = {c: st.builds(lambda u, c=c: ('GET', '/v2/%s/%s' % (c, u), None),
                        pick(c))
           for c in COLLECTIONS}
    v2 = st.one_of(
        st.sampled_from([('GET', '/v2/' + c, None) for c in COLLECTIONS]),
        st.one_of(list(one.values())),
        st.builds(lambda n: ('GET', '/v2/device_profiles/' + n, None),
                  pick('profile_names')),
        st.builds(lambda i, r: ('GET', '%s?instance=%s%s' % (URL, i, r),
                                None),
                  instance, st.sampled_from(['', '&bind_state=resolved'])),
        st.builds(lambda d, a: ('POST', '/v2/devices/%s/%s' % (d, a), None),
                  pick('devices'),
                  st.sampled_from(['enable', 'disable', 'activate'])),
        st.builds(lambda n, g: ('POST', '/v2/device_profiles',
                                [{'name': n, 'groups': g}]),
                  st.sampled_from(['fuzzed', 'two']), groups),
        st.builds(lambda n: ('POST', URL, {'device_profile_name': n}),
                  pick('profile_names')),
        st.builds(lambda b: ('PATCH', URL, b), st.one_of(bind, unbind)),
        st.builds(lambda b: ('PATCH', '%s/%s' % (URL, next(iter(b))), b),
                  st.one_of(bind, unbind)),
        st.builds(lambda d, i: ('PATCH', '/v2/deployables/%s/program' % d,
                                [{'path': '/program', 'op': 'replace',
                                  'value': [{'image_uuid': i}]}]),
                  pick('deployables'), pick('images')),
        st.builds(lambda d, kv: ('POST', '/v2/attributes',
                                 dict(d, key=kv[0], value=kv[1])),
                  st.one_of(pick('int_ids').map(
                      lambda i: {'deployable_id': i}),
                      pick('deployables').map(
                      lambda u: {'deployable_uuid': u})),
                  st.sampled_from([('owner', 'x'), ('trait5', 'CUSTOM_X'),
                                   ('rc', 'GPU')])),
        st.builds(lambda a: ('DELETE', '%s?arqs=%s' % (URL, ','.join(a)),
                             None), arqs),
        st.builds(lambda i: ('DELETE', '%s?instance=%s' % (URL, i), None),
                  instance),
        st.builds(lambda t: ('DELETE', '/v2/device_profiles/' + t, None),
                  st.one_of(pick('device_profiles'), pick('profile_names'),
                            st.just('split,unused'))),
        st.builds(lambda u: ('DELETE', '/v2/attributes/' + u, None),
                  pick('attributes')))
    return _weighted((v2.map(lambda r: r + ({},)), 6),
                     (_valid_v1(world), 2), (_valid_v25(world), 2))


def _valid_v1(world):
    ids = world.ids
    pick = st.sampled_from
    accelerator = st.one_of(pick(ids['accelerators']),
                            pick(ids['attached']))
    instance = st.one_of(st.uuids().map(str), pick(ids['instances']))
    names = st.one_of(st.just(None), st.sampled_from(['new-card', 'rack-2']),
                      pick(ids['names']))
    create = st.builds(
        lambda n, u, h: ('POST', ACCELERATORS, dict(
            {'name': n or 'new-card'}, **({'uuid': u} if u else {})), h),
        names, st.one_of(st.none(), st.just(MISSING[2]),
                         pick(ids['accelerators'])), _ADMIN_OR_NOT)
    attach = st.builds(
        lambda u, b, h: ('PUT', '%s/%s' % (ACCELERATORS, u), b, h),
        accelerator, st.one_of(
            instance.map(lambda i: {'instance_uuid': i}),
            st.sampled_from([{'host': 'node1'}, {'host': 'node9'}])),
        st.sampled_from([{}, ADMIN, MANAGER]))
    specs = _spec_bodies()
    if_match = st.one_of(st.none(), st.sampled_from(['"1"', '"2"', '*']),
                         _IF_MATCH)
    spec = st.one_of([st.builds(
        lambda u, b, h, m, key=key: (
            'PUT', '%s/%s/%s' % (ACCELERATORS, u, key), b,
            dict(h, **({'If-Match': m} if m else {}))),
        accelerator, specs[key], _ADMIN_OR_NOT, if_match) for key in SPECS])
    return _weighted(
        (st.just(('GET', ACCELERATORS, None, {})), 1),
        (st.builds(lambda u: ('GET', '%s/%s' % (ACCELERATORS, u), None, {}),
                   accelerator), 1),
        (create, 1), (attach, 2), (spec, 3),
        (st.builds(lambda u, h: ('DELETE', '%s/%s' % (ACCELERATORS, u),
                                 None, h),
                   accelerator, st.sampled_from([{}, ADMIN, MANAGER])), 2))


def _valid_v25(world):
    ids = world.ids
    host = st.sampled_from(['node1', 'node1', 'node9'])
    driver = st.sampled_from(ids['drivers'])
    one = st.builds(lambda h, d: '/v2/drivers/%s/%s' % (h, d), host, driver)
    query = st.one_of(st.just(''), host.map('?host={}'.format),
                      st.builds('?host={}&driver={}'.format, host,
                                st.sampled_from(['fake', 'pci', 'x'])),
                      st.just('?driver=fake'))
    update = st.one_of(st.none(), st.just({}), st.sampled_from(
        ids['images']).map(lambda i: {'image_uuid': i}))
    routes = st.one_of(
        st.builds(lambda q: ('GET', '/v2/drivers' + q, None), query),
        st.builds(lambda q: ('GET', '/v2/services' + q, None), query),
        st.builds(lambda h, d: ('POST', '/v2/drivers',
                                {'host': h, 'name': d}), host, driver),
        st.builds(lambda u, b: ('PATCH', u, b), one, update),
        st.builds(lambda u: ('DELETE', u, None), one),
        st.builds(lambda b: ('POST', '/v2/services/discover', b),
                  st.one_of(st.none(), st.just({}),
                            host.map(lambda h: {'host': h}))))
    return st.builds(
        lambda r, v, h: r + (dict(h, **{'OpenStack-API-Version': v}),),
        routes, _V25_VERSIONS, _ADMIN_OR_NOT)


_MUTATIONS = st.sampled_from(['replace', 'drop', 'grow', 'wrap', 'null'])


@st.composite
def _mutated(draw, shape):
    """A valid-looking body with one to three nodes replaced, dropped,
    grown or wrapped."""
    # NOTE(tests): a copy, as st.just() hands out the same object each time.
    value = copy.deepcopy(draw(shape))
    for _ in range(draw(st.integers(1, 3))):
        nodes = list(_nodes(value))
        path = nodes[draw(st.integers(0, len(nodes) - 1))]
        kind = draw(_MUTATIONS)
        if not path:
            if kind == 'wrap':
                value = [value] if draw(st.booleans()) else {'body': value}
            elif kind == 'null':
                value = None
            else:
                value = draw(_JUNK)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        if kind == 'replace':
            parent[key] = draw(_JUNK)
        elif kind == 'null':
            parent[key] = None
        elif kind == 'wrap':
            parent[key] = [parent[key]]
        elif kind == 'drop':
            del parent[key]
        elif isinstance(parent[key], dict):
            parent[key][draw(_TEXT)] = draw(_JUNK)
        elif isinstance(parent[key], list):
            parent[key].append(draw(_JUNK))
        else:
            parent[key] = draw(_JUNK)
    return value


_ENCODERS = st.sampled_from([
    lambda v: json.dumps(v).encode(),
    lambda v: json.dumps(v, ensure_ascii=False).encode('utf-8'),
    lambda v: json.dumps(v).encode('utf-16'),
])

_RAW_BODIES = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b'', b'{', b'[1,', b'{"a": 1}}', b'\xff\xfe\x00',
                     b'\xef\xbb\xbf{}', b'1e99999', b'-' * 10,
                     b'{"a": "\xff"}', b'\x00' * 10, b'<a>1</a>', b'<a',
                     b'a=1&b=2', b'--x\r\n',
                     b'--x\r\nContent-Disposition: form-data; name="a"'
                     b'\r\n\r\n1\r\n--x--\r\n']),
    st.builds(lambda piece, n: piece * n,
              st.sampled_from([b'1', b' ', b'[', b'{"a":']),
              st.sampled_from([10, 900, 3000, 5000, 20000, 120000])))


def _body(shape):
    if shape is None:
        values = [_JUNK]
        nothing = [st.none()] * 3
    else:
        values = [shape, shape, _mutated(shape), _mutated(shape), _JUNK]
        nothing = [st.none()]
    text = st.builds(lambda encode, value: encode(value), _ENCODERS,
                     st.one_of(*values))
    truncated = st.builds(lambda b, cut: b[:int(len(b) * cut)], text,
                          st.floats(0, 1))
    return st.one_of(*nothing, text, text, text, truncated, _RAW_BODIES)


_CALLERS = st.sampled_from([{}, ADMIN, MEMBER, OTHER, NOVA, MANAGER])
_IDENTITIES = st.one_of(
    st.just({}), st.just({}),
    st.sampled_from([ADMIN, MEMBER, OTHER, NOVA, MANAGER]),
    st.sampled_from([ADMIN, MEMBER, OTHER, NOVA, MANAGER]),
    st.fixed_dictionaries({}, optional={
        'X-Roles': st.one_of(st.sampled_from([
            'admin', 'member,reader', 'reader', 'member', 'ADMIN', '',
            'admin,member,reader', ' admin , reader ', 'service',
            'manager']),
            _HEADER_TEXT),
        'X-Project-Id': st.one_of(st.sampled_from([
            'p-tenant', 'p-other', 'noauth-project', '']), _HEADER_TEXT),
        'X-User-Id': st.one_of(st.just('u-fuzz'), _HEADER_TEXT),
        'X-Service-Roles': st.one_of(st.sampled_from([
            'service', '', 'admin', 'Service']), _HEADER_TEXT)}))

_VALID_VERSIONS = st.sampled_from([
    'accelerator 2.0', 'accelerator 2.1', 'accelerator 2.2',
    'accelerator 2.3', 'accelerator 2.4', 'accelerator 2.5',
    'accelerator latest'])
_VERSIONS = st.one_of(_VALID_VERSIONS, st.sampled_from([
    '2.2', 'latest', 'accelerator 2.6', 'accelerator 2.99',
    'accelerator 3.0', 'accelerator 1.9', 'accelerator 2', 'accelerator 2.',
    'accelerator .1', 'accelerator 2.3.1', 'accelerator -2.1',
    'accelerator 2.' + '9' * 30, 'compute 2.1',
    'compute 2.1, accelerator 2.2', 'accelerator 2.1, accelerator 2.3', '',
    ' ', 'accelerator', 'ACCELERATOR 2.2', 'accelerator\t2.2',
    'accelerator 2.2 2.3']), _HEADER_TEXT)

_CONTENT_TYPES = st.one_of(
    st.just('application/json'), st.just('application/json'),
    st.just('application/json'), st.just('application/json'), st.none(),
    st.sampled_from([
        'application/json; charset=utf-8',
        'application/json; charset=latin-1',
        'application/json; charset=utf-16', 'text/plain', 'application/xml',
        'text/xml', 'application/x-www-form-urlencoded',
        'multipart/form-data', 'multipart/form-data; boundary=x',
        'application/json-patch+json', 'application/octet-stream', '*/*',
        ';', 'application/']),
    _HEADER_TEXT)

_ACCEPTS = st.sampled_from(['application/json', '*/*', 'text/html',
                            'application/xml', 'application/json;q=0',
                            'text/html,application/xhtml+xml,*/*;q=0.8',
                            ';;', 'é'])


_NUMBERS = st.one_of(
    st.integers().map(str),
    st.sampled_from(['0', '1', '2', '100', '-1', ' 5', '5 ', '0x10', '1_0',
                     '1e3', str(2 ** 31)]),
    st.sampled_from(['²', '١٢', '٣', str(2 ** 63), str(-2 ** 63 - 1),
                     '9' * 25, '9' * 5000]))

_V25_VERSIONS = st.one_of(st.sampled_from(['accelerator 2.5',
                                           'accelerator 2.5',
                                           'accelerator latest']),
                          _VALID_VERSIONS)
# NOTE(tests): ETags of /v1/accelerators; a spec update reads the digits.
_IF_MATCH = st.one_of(
    st.sampled_from(['"1"', '"2"', '"3"', 'W/"1"', '*', ' * ', '1', '"1',
                     '""', '"x"', '"-1"', 'W/', ',', '"1", "2"',
                     '"%s"' % ('9' * 5000)]),
    _NUMBERS.map('"{}"'.format), _HEADER_TEXT)
_ADMIN_OR_NOT = st.sampled_from([{}, ADMIN, ADMIN])


def _query(world):
    keys = st.one_of(st.sampled_from([
        'name', 'instance', 'bind_state', 'arqs', 'value', 'limit',
        'marker', 'sort_key', 'sort_dir', 'filters.field', 'filters.value',
        'type', 'vendor', 'hostname', 'deployable_id', 'deployable_uuid',
        'key', 'filters', 'filters.x', 'all_tenants', 'host', 'driver']),
        _TEXT)
    fields = st.sampled_from([
        'uuid', 'name', 'rp_uuid', 'driver_name', 'bitstream_id',
        'device_id', 'parent_id', 'root_id', 'num_accelerators',
        'parent_uuid', 'root_uuid', 'limit', 'marker', 'sort_key',
        'sort_dir', 'type', 'vendor', 'model', 'hostname', 'status',
        'board', 'instance_uuid', ''])
    values = st.one_of(
        _ids(world, 'any'),
        st.sampled_from(world.ids['instances']),
        st.sampled_from(['resolved', 'bound', 'asc', 'desc', 'id', 'uuid',
                         'name', 'created_at', 'FPGA', '0xABCD', 'node1',
                         'rc', 'two,split', 'two,,split', 'fake', 'pci',
                         'fake_driver', 'node9']),
        fields,
        st.sampled_from(world.ids['int_ids']).map(str),
        _NUMBERS)
    pair = st.tuples(keys, values).map(lambda p: [p])
    legacy = st.builds(
        lambda f, v: [('filters.field', f), ('filters.value', v)],
        fields, st.one_of(values, _NUMBERS, _NUMBERS))
    paging = st.one_of(
        st.tuples(st.just('limit'), _NUMBERS),
        st.tuples(st.just('marker'), _ids(world, 'any')),
        st.tuples(st.just('sort_key'), fields),
        st.tuples(st.just('sort_dir'), st.sampled_from(['asc', 'desc',
                                                         'up', '']))).map(
        lambda p: [p])
    encoded = st.lists(st.one_of(pair, pair, legacy, paging),
                       max_size=3).map(
        lambda units: urllib.parse.urlencode(
            [p for unit in units for p in unit],
            quote_via=urllib.parse.quote))
    raw = st.sampled_from(['%ff', '%', '&&', '=', 'a=%zz', ';', 'a;b=c',
                           '%00', 'limit=%C2%B2', 'instance=%ff',
                           'name=%ed%a0%80', '=x&=y', 'filters.field'])
    return st.one_of(st.just(''), encoded, encoded, encoded, raw)


_NATURAL = {None: ['GET'], 'devices': ['GET', 'POST'],
            'deployables': ['GET', 'PATCH'],
            'device_profiles': ['GET', 'POST', 'DELETE'],
            'accelerator_requests': ['GET', 'POST', 'PATCH', 'DELETE'],
            'attributes': ['GET', 'POST', 'DELETE'], 'agents': ['GET'],
            'accelerators': ['GET', 'POST', 'PUT', 'DELETE'],
            'drivers': ['GET', 'POST', 'PATCH', 'DELETE'],
            'services': ['GET', 'POST']}
_ACTIONS = {'devices': ['enable', 'disable', 'activate'],
            'deployables': ['program']}


def _routes(world):
    """(path, collection) of every route, known or not."""
    base = st.sampled_from(['/v2/', '/'])
    roots = st.tuples(st.sampled_from(['/', '/v2', '/v2/', '//', '/v2//',
                                       '/v1', '/v3', '/healthcheck']),
                      st.none())
    collections = st.builds(lambda b, c, slash: (b + c + slash, c), base,
                            st.sampled_from(COLLECTIONS),
                            st.sampled_from(['', '/']))
    segments = {c: _segment(world, c) for c in COLLECTIONS + ('any',)}
    items = st.one_of([st.builds(
        lambda b, s, c=c: (b + c + '/' + s, c), base, segments[c])
        for c in COLLECTIONS])
    # NOTE(tests): devices and deployables have real actions; thrice the
    # weight.
    actions = st.one_of([st.builds(
        lambda s, v, c=c: ('/v2/%s/%s/%s' % (c, s, v), c), segments[c],
        st.one_of(st.sampled_from(_ACTIONS.get(c, ['x'])), segments[c]))
        for c in COLLECTIONS + ('devices', 'deployables') * 2])
    deeper = st.builds(
        lambda c, a, b, d: ('/v2/%s/%s/%s/%s' % (c, a, b, d), c),
        st.sampled_from(COLLECTIONS), segments['any'], segments['any'],
        segments['any'])
    unknown = st.builds(lambda s: ('/v2/' + s, None), segments['any'])
    v2 = st.one_of(roots, collections, collections, collections, items,
                   items, items, actions, actions, deeper, unknown)
    return _weighted((v2, 7), (_v1_routes(world), 2),
                     (_v25_routes(world), 2))


def _v1_routes(world):
    root = st.sampled_from(['/v1/accelerators', '/v1/accelerators/',
                            '/v1//accelerators', '/v1/accelerators//',
                            '/v1/Accelerators'])
    uuid = _segment(world, 'accelerators')
    spec = _weighted((st.sampled_from(SPECS), 2),
                     (st.sampled_from(['colour', 'ACC_SPECS', 'acc_specs/',
                                       'revision', 'uuid']), 1),
                     (_segment(world, 'any'), 1))
    return st.one_of(
        st.tuples(root, st.just('accelerators')),
        st.builds(lambda u: (ACCELERATORS + '/' + u, 'accelerators'), uuid),
        st.builds(lambda u, k: ('%s/%s/%s' % (ACCELERATORS, u, k),
                                'accelerators'), uuid, spec),
        st.builds(lambda u, k, x: ('%s/%s/%s/%s' % (ACCELERATORS, u, k, x),
                                   'accelerators'), uuid, spec,
                  _segment(world, 'any')))


def _v25_routes(world):
    base = st.sampled_from(['/v2/', '/v2/', '/'])
    host = _segment(world, 'agents')
    name = _segment(world, 'drivers')
    drivers = _weighted(
        (st.builds(lambda b, s: (b + 'drivers' + s, 'drivers'), base,
                   st.sampled_from(['', '/'])), 1),
        (st.builds(lambda b, h: (b + 'drivers/' + h, 'drivers'), base,
                   host), 1),
        (st.builds(lambda b, h, n: ('%sdrivers/%s/%s' % (b, h, n),
                                    'drivers'), base, host, name), 2),
        (st.builds(lambda h, n, x: ('/v2/drivers/%s/%s/%s' % (h, n, x),
                                    'drivers'),
                   host, name, _segment(world, 'any')), 1))
    services = st.builds(
        lambda b, rest: (b + 'services' + rest, 'services'), base,
        st.one_of(st.sampled_from(['', '/', '/discover', '/discover/',
                                   '/discover/x', '/Discover', '/get_all']),
                  _segment(world, 'any').map(lambda s: '/' + s)))
    return _weighted((drivers, 2), (services, 1))


def requests(world):
    """One to three requests: anything at all, or aimed at a handler that
    reads a body, or at a list's query, or what a client would mean.

    Built once per world, as building strategies is slow.
    """
    routes = _routes(world)
    query = _query(world)
    maybe_query = st.one_of(st.just(''), st.just(''), query)
    shapes = _shapes(world)
    bodies = {c: _body(shapes.get(c)) for c in COLLECTIONS + (None,)}
    bodies.update((name, _body(shape)) for name, shape in shapes.items()
                  if name not in bodies)
    methods = {c: st.one_of(st.sampled_from(m), st.sampled_from(m),
                            st.sampled_from(METHODS))
               for c, m in _NATURAL.items()}
    versions = st.one_of(st.none(), st.none(), _VALID_VERSIONS,
                         _VALID_VERSIONS, _VERSIONS)
    # NOTE(tests): the 2.5 routes are 404 below 2.5; mostly ask for it.
    versions_25 = _weighted((_V25_VERSIONS, 2), (versions, 1))
    accelerator = _segment(world, 'accelerators')
    driver = st.builds(lambda h, n: '/v2/drivers/%s/%s' % (h, n),
                       _weighted((st.just('node1'), 2),
                                 (_segment(world, 'agents'), 1)),
                       _segment(world, 'drivers'))
    # NOTE(tests): (method, path, collection, the body's shape).
    body_routes = st.one_of(
        st.just(('POST', '/v2/device_profiles', 'device_profiles',
                 'device_profiles')),
        st.just(('POST', URL, 'accelerator_requests',
                 'accelerator_requests')),
        st.just(('PATCH', URL, 'accelerator_requests',
                 'accelerator_requests')),
        st.builds(lambda u: ('PATCH', URL + '/' + u, 'accelerator_requests',
                             'accelerator_requests'),
                  _segment(world, 'accelerator_requests')),
        st.builds(lambda u: ('PATCH', '/v2/deployables/%s/program' % u,
                             'deployables', 'deployables'),
                  _segment(world, 'deployables')),
        st.just(('POST', '/v2/attributes', 'attributes', 'attributes')))
    v1_body_routes = st.one_of(
        st.just(('POST', ACCELERATORS, 'accelerators',
                 'accelerator_create')),
        st.builds(lambda u: ('PUT', ACCELERATORS + '/' + u, 'accelerators',
                             'attach'), accelerator),
        st.builds(lambda u, k: ('PUT', '%s/%s/%s' % (ACCELERATORS, u, k),
                                'accelerators', 'spec:' + k),
                  accelerator, st.sampled_from(SPECS)))
    v25_body_routes = st.one_of(
        st.just(('POST', '/v2/drivers', 'drivers', 'driver_install')),
        st.builds(lambda u: ('PATCH', u, 'drivers', 'driver_update'),
                  driver),
        st.just(('POST', '/v2/services/discover', 'services', 'services')))
    body_routes = _weighted((body_routes, 3), (v1_body_routes, 1),
                            (v25_body_routes, 1))
    list_routes = _weighted(
        (st.builds(lambda method, c: (method, '/v2/' + c, c),
                   st.sampled_from(['GET', 'GET', 'GET', 'DELETE']),
                   st.sampled_from(COLLECTIONS)), 4),
        (st.sampled_from([('GET', '/v2/drivers', 'drivers'),
                          ('GET', '/v2/services', 'services'),
                          ('GET', ACCELERATORS, 'accelerators')]), 1))
    valid = _valid(world)

    @st.composite
    def fuzzed(draw, focus):
        body = version = None
        if focus == 'any':
            path, collection = draw(routes)
            method = draw(methods[collection])
            parameters = draw(maybe_query)
            if method in ('POST', 'PUT', 'PATCH') or draw(st.booleans()):
                body = draw(bodies[collection])
        elif focus == 'body':
            method, path, collection, shape = draw(body_routes)
            parameters = draw(maybe_query)
            body = draw(bodies[shape])
        else:
            method, path, collection = draw(list_routes)
            parameters = draw(query)
            # NOTE(tests): paging exists from 2.4 only.
            if draw(st.booleans()):
                version = draw(_VALID_VERSIONS)
        headers = dict(draw(_IDENTITIES))
        version = version or draw(versions_25 if collection in V25
                                  else versions)
        if version is not None:
            headers['OpenStack-API-Version'] = version
        if collection in V1 and draw(st.booleans()):
            headers['If-Match'] = draw(_IF_MATCH)
        if body is not None:
            content_type = draw(_CONTENT_TYPES)
            if content_type is not None:
                headers['Content-Type'] = content_type
        if draw(st.integers(0, 9)) == 0:
            headers['Accept'] = draw(_ACCEPTS)
        return Request(method, path + ('?' + parameters if parameters
                                       else ''), headers, body)

    @st.composite
    def meant(draw):
        method, url, value, needed = draw(valid)
        headers = dict(draw(_CALLERS))
        version = draw(st.one_of(st.none(), _VALID_VERSIONS))
        if version is not None:
            headers['OpenStack-API-Version'] = version
        headers.update(needed)
        body = None
        if value is not None:
            headers['Content-Type'] = 'application/json'
            body = json.dumps(value).encode()
        return Request(method, url, headers, body)

    return st.lists(st.one_of(fuzzed('any'), fuzzed('body'),
                              fuzzed('query'), meant()),
                    min_size=1, max_size=3)


class Request:
    """One HTTP request, as the failure report shows it."""

    def __init__(self, method, url, headers, body):
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body

    def __repr__(self):
        body = self.body
        if body is not None and len(body) > 300:
            body = body[:300] + b'...(%d bytes)' % len(body)
        return 'Request(%r, %r, headers=%r, body=%r)' % (
            self.method, self.url, self.headers, body)

    def send(self, api):
        return api.request(self.url, method=self.method,
                           headers=self.headers, body=self.body or b'',
                           expect_errors=True)
