"""Every route group as each persona, with real Keystone tokens."""

import dataclasses
import json
import time
import typing
import uuid

import pytest
import requests

from cyborg.tests import deployments
from cyborg.tests import faults
from cyborg.tests import processes

pytestmark = pytest.mark.functional

TIMEOUT = 30
ARQS = '/v2/accelerator_requests'
PROFILES = '/v2/device_profiles'
V1 = '/v1/accelerators'
GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]
NO_HOST = 'no-such-host'
RESOLVED = {'Bound', 'BindFailed', 'Deleting'}
SETTLED = {'Initial', 'Bound', 'BindFailed', 'Unbound', 'UnbindFailed'}
ATTACHMENT_DETAILS = ('instance_uuid', 'arq_uuid', 'project_id')
SERVICE_TOKEN_WORDS = 'requires a service token'

# -- The personas -------------------------------------------------------------

NOVA_ALONE = 'nova-service-user-alone'
SYSTEM_ADMIN = 'system-admin'
PERSONAS = ('p1-reader', 'p1-member', 'p1-manager', 'p2-member',
            'p2-manager', 'admin', NOVA_ALONE, SYSTEM_ADMIN)
# NOTE(tests): Keystone's implied roles make an admin a manager, a member
# and a reader too, and a manager a member and a reader.
ADMINS = frozenset({'admin'})
MANAGERS = frozenset({'p1-manager', 'p2-manager'}) | ADMINS
MEMBERS = frozenset({'p1-member', 'p2-member'}) | MANAGERS
READERS = frozenset({'p1-reader'}) | MEMBERS
SERVICE = frozenset({NOVA_ALONE})
P2 = frozenset({'p2-member', 'p2-manager'})
# NOTE(tests): who acts on p1's ARQs: its members and administrators
# (cyborg:arq:all_projects). Nova's service user alone passes the ARQ
# rules (role service) but reaches only its own project's ARQs: Nova acts
# with the user's token, its own going along as the service token.
P1_ARQ_ACTORS = frozenset({'p1-member', 'p1-manager', 'admin'})
P1_ARQ_READERS = frozenset({'p1-reader', 'p1-member', 'p1-manager',
                            'admin'})
# {persona: (Keystone user, its project)}; the system admin has none.
USERS = {'p1-reader': ('p1-reader', 'p1'),
         'p1-member': ('p1-member', 'p1'),
         'p1-manager': ('p1-manager', 'p1'),
         'p2-member': ('p2-member', 'p2'),
         'p2-manager': ('p2-manager', 'p2'),
         'admin': ('admin', 'admin'),
         NOVA_ALONE: ('nova', 'service'),
         SYSTEM_ADMIN: ('admin', None)}


# -- The deployment -----------------------------------------------------------


def _fault(resp):
    """The WSME fault inside the error envelope (checks the envelope too)."""
    assert resp.headers['Content-Type'].startswith('application/json'), (
        resp.headers, resp.text)
    return faults.fault_of(resp.json())


def _expect(resp, status, words=None):
    """Assert the status; a refusal is in the envelope, naming ``words``."""
    assert resp.status_code == status, '%s %s: %d, not %d: %s' % (
        resp.request.method, resp.request.url, resp.status_code, status,
        resp.text)
    if status >= 400:
        fault = _fault(resp)
        assert fault['faultcode'] == ('Client' if status < 500
                                      else 'Server'), fault
        if words:
            assert words in fault['faultstring'], fault
    return resp


class World:
    """The all-in-one behind Keystone, its fake device ready, with what
    every case reads: a device profile, p1's and p2's unbound ARQs, an
    operator's /v1 record and a Nova instance of each project."""

    def __init__(self, keystone, target, nova):
        self.keystone = keystone
        self.target = target
        self.nova = nova
        self.url = target.url
        self.host = target.host
        self.http = requests.Session()
        self._tokens = {}
        self.projects = dict(keystone.ids['projects'],
                             admin=self._admin_project())
        self.instances = {project: str(uuid.uuid4())
                          for project in ('p1', 'p2')}
        for project, instance in self.instances.items():
            nova.own(instance, self.projects[project])
        self._setup()

    def _admin_project(self):
        sess = self.keystone.session('admin')
        return sess.auth.get_project_id(sess)

    def _setup(self):
        (device,) = self.ok('admin', 'GET', '/v2/devices').json()['devices']
        self.device = device['uuid']
        # NOTE(tests): a discovered device waits inactive for an operator;
        # /v1 attaches to instances need it ready.
        self.ok('admin', 'POST', '/v2/devices/%s/activate' % self.device,
                version='2.4')
        assert self.device_status() == 'ready'
        (deployable,) = self.ok('admin', 'GET', '/v2/deployables').json()[
            'deployables']
        self.deployable = deployable['uuid']
        self.rp_uuid = deployable['rp_uuid']
        self.attribute = self.ok(
            'admin', 'GET', '/v2/attributes', version='2.4',
            params={'deployable_uuid': self.deployable}).json()[
                'attributes'][0]['uuid']
        self.profile = self.ok('admin', 'POST', PROFILES, status=201, body=[
            {'name': 'personas', 'groups': GROUPS}]).json()
        self.arqs = {project: self.create_arq('%s-member' % project)
                     for project in ('p1', 'p2')}
        created = self.ok('admin', 'POST', V1, status=201,
                          body={'name': 'personas-record'})
        self.record = created.headers['Location'].rsplit('/', 1)[1]

    # -- Requests -------------------------------------------------------------

    def token(self, persona):
        if persona not in self._tokens:
            user, project = USERS[persona]
            self._tokens[persona] = (
                self.keystone.system_admin_token() if project is None
                else self.keystone.token(user))
        return self._tokens[persona]

    def project_of(self, persona):
        return self.projects.get(USERS[persona][1])

    def call(self, persona, method, path, version=None, body=None,
             service=False, params=None, headers=None):
        """A request with ``persona``'s token (and Nova's service token
        when ``service``)."""
        sent = {'X-Auth-Token': self.token(persona)}
        if version:
            sent['OpenStack-API-Version'] = 'accelerator %s' % version
        if service:
            sent['X-Service-Token'] = self.token(NOVA_ALONE)
        sent.update(headers or {})
        return self.http.request(method, self.url + path, json=body,
                                 params=params, headers=sent,
                                 timeout=TIMEOUT)

    def ok(self, persona, method, path, status=200, **kwargs):
        return _expect(self.call(persona, method, path, **kwargs), status)

    # -- What cases set up and look at ----------------------------------------

    def device_status(self):
        return self.ok('admin', 'GET', '/v2/devices/%s' % self.device,
                       version='2.4').json()['status']

    def create_arq(self, persona='p1-member'):
        (arq,) = self.ok(persona, 'POST', ARQS, status=201, body={
            'device_profile_name': self.profile['name']}).json()['arqs']
        return arq['uuid']

    def arq(self, arq_uuid):
        """The ARQ as an administrator sees it; None once deleted."""
        resp = self.call('admin', 'GET', '%s/%s' % (ARQS, arq_uuid))
        if resp.status_code == 404:
            return None
        return _expect(resp, 200).json()

    def bind_body(self, arq_uuids, instance, project=None):
        ops = [{'op': 'add', 'path': '/hostname', 'value': self.host},
               {'op': 'add', 'path': '/device_rp_uuid',
                'value': self.rp_uuid},
               {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        if project is not None:
            ops.append({'op': 'add', 'path': '/project_id',
                        'value': project})
        return {arq: ops for arq in arq_uuids}

    def wait_resolved(self, instance):
        """The ARQs bound to ``instance``, once none is binding."""
        def resolved():
            resp = self.call('admin', 'GET', ARQS, params={
                'instance': instance, 'bind_state': 'resolved'})
            if resp.status_code == 423:
                return None
            return _expect(resp, 200).json()['arqs']

        return processes.wait_for(resolved, TIMEOUT, interval=0.05,
                                  what='the ARQs of %s to be resolved'
                                  % instance)

    def bind(self, arq_uuid, persona='p1-member'):
        """Nova binds the ARQ to a new instance; the instance."""
        instance = str(uuid.uuid4())
        self.ok(persona, 'PATCH', ARQS, status=202, service=True,
                body=self.bind_body([arq_uuid], instance))
        (bound,) = self.wait_resolved(instance)
        assert bound['state'] == 'Bound', bound
        return instance

    def drop_arqs(self, *arq_uuids):
        """Delete ARQs as Nova would (any state), once settled."""
        for arq_uuid in arq_uuids:
            found = processes.wait_for(
                lambda arq_uuid=arq_uuid: self._settled(arq_uuid), TIMEOUT,
                interval=0.05, what='ARQ %s to settle' % arq_uuid)
            if found != 'gone':
                self.ok('admin', 'DELETE', ARQS, status=204, service=True,
                        params={'arqs': arq_uuid})

    def _settled(self, arq_uuid):
        found = self.arq(arq_uuid)
        if found is None:
            return 'gone'
        return found if found['state'] in SETTLED else None

    def accelerator(self, persona='admin', uuid_=None):
        return self.ok(persona, 'GET', '%s/%s' % (
            V1, uuid_ or self.deployable)).json()

    def detach(self, uuid_=None):
        """Detach as an administrator when anything is attached."""
        if self.accelerator(uuid_=uuid_)['attachments']:
            self.ok('admin', 'DELETE', '%s/%s' % (V1, uuid_ or
                                                  self.deployable),
                    status=204)


@pytest.fixture(scope='module')
def world(keystone, tmp_path_factory):
    began = time.monotonic()
    with deployments.FakeNova() as nova:
        with deployments.all_in_one_behind_keystone(
                tmp_path_factory.mktemp('aio-personas'), keystone,
                sections={'nova': nova.section()}) as target:
            found = World(keystone, target, nova)
            print('personas: deployment ready in %.1fs'
                  % (time.monotonic() - began))
            yield found
            found.http.close()
            print('personas: module done in %.1fs'
                  % (time.monotonic() - began))


# -- The table ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Route:
    """One request, and who may make it.

    ``path`` and the strings of ``body`` are format()ed with the case's
    names: the world's (device, deployable, ...) and what ``setup``
    returns. Whoever is in ``allowed`` gets ``ok``; a persona of
    ``others`` gets its status there; one of ``passes`` (who pass
    ``rule`` yet lack what the route also needs) a 403 naming ``gate``;
    anyone else a 403 naming ``rule``.
    """

    name: str
    method: str
    path: str
    allowed: frozenset
    ok: int
    rule: str
    version: str | None = None
    body: typing.Any = None
    params: dict | None = None
    service: bool = False
    others: dict = dataclasses.field(default_factory=dict)
    passes: frozenset = frozenset()
    gate: str | None = None
    setup: typing.Callable | None = None
    check: typing.Callable | None = None
    cleanup: typing.Callable | None = None

    def expected(self, persona):
        """(status, words of the refusal) of ``persona``."""
        if persona in self.others:
            return self.others[persona], None
        if persona in self.allowed:
            return self.ok, None
        if persona in self.passes:
            return 403, self.gate
        return 403, self.rule


def _formatted(value, names):
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {_formatted(k, names): _formatted(v, names)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_formatted(item, names) for item in value]
    return value


# --- Setups: the names a case adds ---


def _new_attribute(world):
    created = world.ok('admin', 'POST', '/v2/attributes', status=201,
                       version='2.4', body={
                           'deployable_uuid': world.deployable,
                           'key': 'personas_%s' % uuid.uuid4().hex[:8],
                           'value': 'doomed'}).json()
    return {'victim': created['uuid']}


def _new_profile(world):
    created = world.ok('admin', 'POST', PROFILES, status=201, body=[{
        'name': 'doomed-%s' % uuid.uuid4().hex[:8],
        'groups': GROUPS}]).json()
    return {'victim': created['uuid']}


def _disabled(world):
    world.ok('admin', 'POST', '/v2/devices/%s/disable' % world.device,
             version='2.3', status=204)
    assert world.device_status() == 'maintaining'
    return {}


def _unique(world):
    return {'unique': uuid.uuid4().hex[:12]}


def _p1_arq(world):
    return {'arq': world.create_arq('p1-member'),
            'instance': str(uuid.uuid4())}


def _p1_bound_arq(world):
    arq = world.create_arq('p1-member')
    return {'arq': arq, 'instance': world.bind(arq)}


def _resolved_of_both(world):
    """A bound ARQ of p1 and one of p2, beside their unbound ones."""
    bound = {project: world.create_arq('%s-member' % project)
             for project in ('p1', 'p2')}
    for project, arq in bound.items():
        world.bind(arq, '%s-member' % project)
    return {'p1_bound': bound['p1'], 'p2_bound': bound['p2']}


def _p1_attached(world):
    world.ok('p1-manager', 'PUT', '%s/%s' % (V1, world.deployable),
             body={'instance_uuid': world.instances['p1']})
    return {}


# --- Checks: what a case leaves, allowed or refused ---


def _status_after(done, kept):
    """The device is ``done`` after a success, else still ``kept``."""
    def check(world, persona, resp, names):
        expected = done if resp.status_code < 300 else kept
        assert world.device_status() == expected
    return check


def _lists(key, uuid_name):
    def check(world, persona, resp, names):
        if resp.status_code == 200:
            assert names[uuid_name] in [
                item['uuid'] for item in resp.json()[key]]
    return check


def _conductor_up(world, persona, resp, names):
    """The all-in-one's conductor runs on its host, and heartbeats."""
    if resp.status_code == 200:
        assert {(c['host'], c['status']) for c in resp.json()[
            'conductors']} == {(world.host, 'up')}


def _shows(uuid_name, key=None):
    def check(world, persona, resp, names):
        if resp.status_code == 200:
            body = resp.json()
            assert (body[key] if key else body)['uuid'] == names[uuid_name]
    return check


def _attribute_made(world, persona, resp, names):
    if resp.status_code == 201:
        assert resp.json()['value'] == 'made'
    listed = world.ok('admin', 'GET', '/v2/attributes', version='2.4',
                      params={'key': 'personas_%s' % names['unique']})
    assert len(listed.json()['attributes']) == (
        1 if resp.status_code == 201 else 0)


def _victim_gone(path):
    def check(world, persona, resp, names):
        status = world.call('admin', 'GET', path.format(**names)).status_code
        assert status == (404 if resp.status_code == 204 else 200)
    return check


def _profile_made(world, persona, resp, names):
    listed = world.ok('admin', 'GET', PROFILES, params={
        'name': 'made-%s' % names['unique']}).json()['device_profiles']
    assert len(listed) == (1 if resp.status_code == 201 else 0)


def _arqs_created(world, persona, resp, names):
    if resp.status_code == 201:
        arqs = resp.json()['arqs']
        assert len(arqs) == 1
        # NOTE(tests): the owner is the token's project, whoever it is.
        assert arqs[0]['project_id'] == world.project_of(persona)
        assert arqs[0]['state'] == 'Initial'


def _arqs_listed(world, persona, resp, names):
    if resp.status_code != 200:
        return
    listed = resp.json()['arqs']
    mine = world.project_of(persona)
    uuids = {arq['uuid'] for arq in listed}
    if persona in ADMINS:
        assert set(world.arqs.values()) <= uuids
        return
    assert {arq['project_id'] for arq in listed} == {mine}
    own = 'p1' if mine == world.projects['p1'] else 'p2'
    assert world.arqs[own] in uuids
    assert not set(world.arqs.values()) - {world.arqs[own]} & uuids


def _resolved_listed(world, persona, resp, names):
    if resp.status_code != 200:
        return
    listed = resp.json()['arqs']
    assert {arq['state'] for arq in listed} <= RESOLVED
    uuids = {arq['uuid'] for arq in listed}
    if persona in ADMINS:
        assert {names['p1_bound'], names['p2_bound']} <= uuids
        return
    own, other = ('p2', 'p1') if persona in P2 else ('p1', 'p2')
    assert names['%s_bound' % own] in uuids
    assert names['%s_bound' % other] not in uuids
    assert {arq['project_id'] for arq in listed} == {world.projects[own]}


def _arq_named(world, persona, resp, names):
    """A 404 says which ARQ it did not find; a 200 shows it."""
    if resp.status_code == 404:
        assert names['arq'] in _fault(resp)['faultstring']
    elif resp.status_code == 200:
        assert resp.json()['uuid'] == names['arq']


def _arq_state(done, kept):
    """The ARQ is ``done`` after a success (None: deleted), else ``kept``.
    """
    def check(world, persona, resp, names):
        if resp.status_code == 404:
            assert names['arq'] in _fault(resp)['faultstring']
        wanted = done if resp.status_code < 300 else kept
        if wanted == 'Bound':
            (bound,) = world.wait_resolved(names['instance'])
            assert bound['uuid'] == names['arq']
        found = world.arq(names['arq'])
        assert (found and found['state']) == wanted, found
    return check


def _instance_arqs_deleted(world, persona, resp, names):
    """Deleted by its project and those who reach it; p2's delete of the
    instance finds none of p2's ARQs."""
    kept = 'Bound' if persona in P2 | SERVICE else None
    _arq_state(kept, 'Bound')(world, persona, resp, names)


def _arq_moved(world, persona, resp, names):
    _arq_state('Bound', 'Initial')(world, persona, resp, names)
    found = world.arq(names['arq'])
    moved = resp.status_code == 202
    assert found['project_id'] == world.projects['p2' if moved else 'p1']
    # NOTE(tests): it is then p2's: p1 no longer sees it, p2 does.
    assert world.call('p1-member', 'GET', '%s/%s' % (
        ARQS, names['arq'])).status_code == (404 if moved else 200)
    assert world.call('p2-member', 'GET', '%s/%s' % (
        ARQS, names['arq'])).status_code == (200 if moved else 404)


def _accelerator_attached(world, persona, resp, names):
    attachments = world.accelerator()['attachments']
    if resp.status_code == 200:
        (attached,) = attachments
        assert attached['instance_uuid'] == world.instances['p1']
        assert resp.json()['attachments'][0]['instance_uuid'] == (
            world.instances['p1'])
    else:
        assert attachments == []


def _accelerator_detached(world, persona, resp, names):
    attachments = world.accelerator()['attachments']
    assert len(attachments) == (0 if resp.status_code == 204 else 1)


def _host_attached(world, persona, resp, names):
    attachments = world.accelerator(uuid_=world.record)['attachments']
    assert [a['host'] for a in attachments] == (
        [world.host] if resp.status_code == 200 else [])


# --- Cleanups ---


def _status(resp):
    """The status of a case's request; None when it was not answered."""
    return None if resp is None else resp.status_code


def _enable(world, resp, names):
    world.ok('admin', 'POST', '/v2/devices/%s/enable' % world.device,
             version='2.3', status=204)


def _drop_created_attribute(world, resp, names):
    if _status(resp) == 201:
        world.ok('admin', 'DELETE', '/v2/attributes/%s'
                 % resp.json()['uuid'], status=204)


def _drop_victim(path):
    def cleanup(world, resp, names):
        if _status(resp) != 204:
            world.ok('admin', 'DELETE', path.format(**names), status=204)
    return cleanup


def _drop_created_profile(world, resp, names):
    if _status(resp) == 201:
        world.ok('admin', 'DELETE', '%s/%s' % (PROFILES,
                                               resp.json()['uuid']),
                 status=204)


def _drop_created_arqs(world, resp, names):
    if _status(resp) == 201:
        world.drop_arqs(*[arq['uuid'] for arq in resp.json()['arqs']])


def _drop_names(*keys):
    def cleanup(world, resp, names):
        world.drop_arqs(*[names[key] for key in keys])
    return cleanup


def _detach(world, resp, names):
    world.detach()


def _detach_record(world, resp, names):
    world.detach(world.record)


def _bind(path='/instance_uuid', project=None):
    """A bind patch of the case's ARQ to its instance."""
    ops = [{'op': 'add', 'path': '/hostname', 'value': '{host}'},
           {'op': 'add', 'path': '/device_rp_uuid', 'value': '{rp_uuid}'},
           {'op': 'add', 'path': path, 'value': '{instance}'}]
    if project:
        ops.append({'op': 'add', 'path': '/project_id', 'value': project})
    return {'{arq}': ops}


UNBIND = {'{arq}': [{'op': 'remove', 'path': path} for path in (
    '/hostname', '/device_rp_uuid', '/instance_uuid')]}
# (Nova's service user alone passes the ARQ write rules, not the read ones)
P2_NOT_FOUND = {persona: 404 for persona in P2 | SERVICE}
P2_CANNOT_SEE = {persona: 404 for persona in P2}
ARQ_UPDATE = 'cyborg:arq:update'
ARQ_DELETE = 'cyborg:arq:delete'

ROUTES = [
    # -- devices: reads for managers, actions for administrators --
    Route('devices-list', 'GET', '/v2/devices', MANAGERS, 200,
          'cyborg:device:get_all', check=_lists('devices', 'device')),
    Route('devices-show', 'GET', '/v2/devices/{device}', MANAGERS, 200,
          'cyborg:device:get_one', check=_shows('device')),
    Route('devices-enable', 'POST', '/v2/devices/{device}/enable', ADMINS,
          204, 'cyborg:device:enable', version='2.3', setup=_disabled,
          check=_status_after('ready', 'maintaining'), cleanup=_enable),
    Route('devices-disable', 'POST', '/v2/devices/{device}/disable',
          ADMINS, 204, 'cyborg:device:disable', version='2.3',
          check=_status_after('maintaining', 'ready'), cleanup=_enable),
    # -- deployables --
    Route('deployables-list', 'GET', '/v2/deployables', MANAGERS, 200,
          'cyborg:deployable:get_all',
          check=_lists('deployables', 'deployable')),
    Route('deployables-show', 'GET', '/v2/deployables/{deployable}',
          MANAGERS, 200, 'cyborg:deployable:get_one',
          check=_shows('deployable')),
    # NOTE(tests): no Glance here; an administrator's request gets past
    # the policy to the image, which cannot be fetched (503).
    Route('deployables-program', 'PATCH', '/v2/deployables/{missing}/program',
          ADMINS, 503, 'cyborg:deployable:program', body=[{
              'op': 'replace', 'path': '/program',
              'value': [{'image_uuid': '{missing}'}]}]),
    # -- attributes --
    Route('attributes-list', 'GET', '/v2/attributes', MANAGERS, 200,
          'cyborg:attribute:get_all',
          check=_lists('attributes', 'attribute')),
    Route('attributes-show', 'GET', '/v2/attributes/{attribute}', MANAGERS,
          200, 'cyborg:attribute:get_one', check=_shows('attribute')),
    Route('attributes-create', 'POST', '/v2/attributes', ADMINS, 201,
          'cyborg:attribute:create', version='2.4', body={
              'deployable_uuid': '{deployable}',
              'key': 'personas_{unique}', 'value': 'made'},
          setup=_unique, check=_attribute_made,
          cleanup=_drop_created_attribute),
    Route('attributes-delete', 'DELETE', '/v2/attributes/{victim}', ADMINS,
          204, 'cyborg:attribute:delete', setup=_new_attribute,
          check=_victim_gone('/v2/attributes/{victim}'),
          cleanup=_drop_victim('/v2/attributes/{victim}')),
    # -- device profiles: read by project readers, written by admins --
    Route('profiles-list', 'GET', PROFILES, READERS, 200,
          'cyborg:device_profile:get_all',
          check=_lists('device_profiles', 'profile')),
    Route('profiles-show', 'GET', PROFILES + '/{profile}', READERS, 200,
          'cyborg:device_profile:get_one',
          check=_shows('profile', 'device_profile')),
    Route('profiles-show-by-name', 'GET', PROFILES + '/{profile_name}',
          READERS, 200, 'cyborg:device_profile:get_one', version='2.2',
          check=_shows('profile', 'device_profile')),
    Route('profiles-create', 'POST', PROFILES, ADMINS, 201,
          'cyborg:device_profile:create',
          body=[{'name': 'made-{unique}', 'groups': GROUPS}],
          setup=_unique, check=_profile_made,
          cleanup=_drop_created_profile),
    Route('profiles-delete', 'DELETE', PROFILES + '/{victim}', ADMINS, 204,
          'cyborg:device_profile:delete', setup=_new_profile,
          check=_victim_gone(PROFILES + '/{victim}'),
          cleanup=_drop_victim(PROFILES + '/{victim}')),
    # -- accelerator requests --
    Route('arqs-create', 'POST', ARQS, MEMBERS | SERVICE, 201,
          'cyborg:arq:create', body={'device_profile_name': '{profile_name}'},
          check=_arqs_created, cleanup=_drop_created_arqs),
    Route('arqs-list', 'GET', ARQS, READERS, 200, 'cyborg:arq:get_all',
          check=_arqs_listed),
    Route('arqs-list-resolved', 'GET', ARQS, READERS, 200,
          'cyborg:arq:get_all', params={'bind_state': 'resolved'},
          setup=_resolved_of_both, check=_resolved_listed,
          cleanup=_drop_names('p1_bound', 'p2_bound')),
    Route('arqs-show', 'GET', ARQS + '/{arq}', P1_ARQ_READERS, 200,
          'cyborg:arq:get_one', others=P2_CANNOT_SEE, setup=_p1_arq,
          check=_arq_named, cleanup=_drop_names('arq')),
    Route('arqs-delete', 'DELETE', ARQS, P1_ARQ_ACTORS, 204, ARQ_DELETE,
          params={'arqs': '{arq}'}, others=P2_NOT_FOUND, setup=_p1_arq,
          check=_arq_state(None, 'Initial'), cleanup=_drop_names('arq')),
    Route('arqs-bind', 'PATCH', ARQS, frozenset(), 202, ARQ_UPDATE,
          body=_bind(), passes=MEMBERS | SERVICE, gate=SERVICE_TOKEN_WORDS,
          setup=_p1_arq, check=_arq_state('Bound', 'Initial'),
          cleanup=_drop_names('arq')),
    Route('arqs-bind-with-service-token', 'PATCH', ARQS, P1_ARQ_ACTORS, 202,
          ARQ_UPDATE, body=_bind(), service=True, others=P2_NOT_FOUND,
          setup=_p1_arq, check=_arq_state('Bound', 'Initial'),
          cleanup=_drop_names('arq')),
    Route('arqs-unbind', 'PATCH', ARQS, frozenset(), 202, ARQ_UPDATE,
          body=UNBIND, passes=MEMBERS | SERVICE, gate=SERVICE_TOKEN_WORDS,
          setup=_p1_bound_arq, check=_arq_state('Unbound', 'Bound'),
          cleanup=_drop_names('arq')),
    Route('arqs-unbind-with-service-token', 'PATCH', ARQS, P1_ARQ_ACTORS,
          202, ARQ_UPDATE, body=UNBIND, service=True, others=P2_NOT_FOUND,
          setup=_p1_bound_arq, check=_arq_state('Unbound', 'Bound'),
          cleanup=_drop_names('arq')),
    # NOTE(tests): a bound ARQ is found (p2: 404) before the conductor
    # asks for the service token.
    Route('arqs-delete-bound', 'DELETE', ARQS, frozenset(), 204, ARQ_DELETE,
          params={'arqs': '{arq}'}, others=P2_NOT_FOUND,
          passes=P1_ARQ_ACTORS, gate=SERVICE_TOKEN_WORDS,
          setup=_p1_bound_arq, check=_arq_state(None, 'Bound'),
          cleanup=_drop_names('arq')),
    Route('arqs-delete-bound-with-service-token', 'DELETE', ARQS,
          P1_ARQ_ACTORS, 204, ARQ_DELETE, params={'arqs': '{arq}'},
          service=True, others=P2_NOT_FOUND, setup=_p1_bound_arq,
          check=_arq_state(None, 'Bound'), cleanup=_drop_names('arq')),
    Route('arqs-delete-by-instance', 'DELETE', ARQS, frozenset(), 204,
          ARQ_DELETE, params={'instance': '{instance}'},
          passes=MEMBERS | SERVICE, gate=SERVICE_TOKEN_WORDS,
          setup=_p1_bound_arq, check=_arq_state(None, 'Bound'),
          cleanup=_drop_names('arq')),
    # NOTE(tests): another project's instance has none of its ARQs: the
    # delete is done (204) and p1's ARQ stays.
    Route('arqs-delete-by-instance-with-service-token', 'DELETE', ARQS,
          P1_ARQ_ACTORS, 204, ARQ_DELETE, params={'instance': '{instance}'},
          service=True, others={persona: 204 for persona in P2 | SERVICE},
          setup=_p1_bound_arq, check=_instance_arqs_deleted,
          cleanup=_drop_names('arq')),
    # -- binding into another project (2.1): administrators only --
    Route('arqs-bind-into-p2', 'PATCH', ARQS, ADMINS, 202, ARQ_UPDATE,
          version='2.1', body=_bind(project='{p2}'), service=True,
          passes=MEMBERS | SERVICE, gate='cyborg:arq:set_project',
          setup=_p1_arq, check=_arq_moved, cleanup=_drop_names('arq')),
    Route('arqs-bind-into-p2-at-2.0', 'PATCH', ARQS, MEMBERS | SERVICE, 406,
          ARQ_UPDATE, version='2.0', body=_bind(project='{p2}'),
          service=True, setup=_p1_arq, check=_arq_state('Initial', 'Initial'),
          cleanup=_drop_names('arq')),
    # -- drivers and services (2.5) --
    Route('drivers-list', 'GET', '/v2/drivers', MANAGERS, 200,
          'cyborg:driver:get_all', version='2.5'),
    Route('services-list', 'GET', '/v2/services', MANAGERS, 200,
          'cyborg:service:get_all', version='2.5'),
    # NOTE(tests): the administrator's install, update and uninstall name
    # a host there is not (404 past the policy), leaving the agent alone.
    Route('drivers-install', 'POST', '/v2/drivers', ADMINS, 404,
          'cyborg:driver:install', version='2.5',
          body={'host': NO_HOST, 'name': 'fake_driver'}),
    Route('drivers-update', 'PATCH', '/v2/drivers/%s/fake_driver' % NO_HOST,
          ADMINS, 404, 'cyborg:driver:update', version='2.5', body={}),
    Route('drivers-uninstall', 'DELETE',
          '/v2/drivers/%s/fake_driver' % NO_HOST, ADMINS, 404,
          'cyborg:driver:uninstall', version='2.5'),
    Route('services-discover', 'POST', '/v2/services/discover', ADMINS, 200,
          'cyborg:service:discover', version='2.5', body={'host': '{host}'}),
    # -- conductors (2.11): administrators only --
    Route('conductors-list', 'GET', '/v2/conductors', ADMINS, 200,
          'cyborg:conductor:get_all', version='2.11', check=_conductor_up),
    # -- /v1 accelerators --
    Route('v1-list', 'GET', V1, MANAGERS, 200, 'cyborg:accelerator:get_all',
          check=_lists('accelerator', 'deployable')),
    Route('v1-show', 'GET', V1 + '/{deployable}', MANAGERS, 200,
          'cyborg:accelerator:get_one', check=_shows('deployable')),
    Route('v1-create', 'POST', V1, ADMINS, 201, 'cyborg:accelerator:create',
          body={'name': 'made-{unique}'}, setup=_unique),
    Route('v1-update-spec', 'PUT', V1 + '/{record}/acc_specs', ADMINS, 200,
          'cyborg:accelerator:update_spec',
          body={'acc_specs': {'num': 2}}),
    Route('v1-attach-host', 'PUT', V1 + '/{record}', ADMINS, 200,
          'cyborg:accelerator:attach_host', body={'host': '{host}'},
          check=_host_attached, cleanup=_detach_record),
    # NOTE(tests): Nova shows p1's instance in p1: p2's manager may attach
    # only its own (400, whether it is another's or missing).
    Route('v1-attach-p1-instance', 'PUT', V1 + '/{deployable}', MANAGERS,
          200, 'cyborg:accelerator:attach_instance',
          body={'instance_uuid': '{p1_instance}'},
          others={'p2-manager': 400}, check=_accelerator_attached,
          cleanup=_detach),
    Route('v1-detach-p1-instance', 'DELETE', V1 + '/{deployable}',
          frozenset({'p1-manager', 'admin'}), 204,
          'cyborg:accelerator:detach', setup=_p1_attached,
          check=_accelerator_detached, cleanup=_detach),
]
def _case(route, persona):
    return pytest.param(route, persona, id='%s-%s' % (route.name, persona))


CASES = [_case(route, persona) for route in ROUTES for persona in PERSONAS]


def _names(world):
    return {'device': world.device, 'deployable': world.deployable,
            'attribute': world.attribute, 'profile': world.profile['uuid'],
            'profile_name': world.profile['name'], 'record': world.record,
            'host': world.host, 'rp_uuid': world.rp_uuid,
            'missing': str(uuid.uuid4()), 'p2': world.projects['p2'],
            'p1_instance': world.instances['p1']}


@pytest.mark.parametrize('route, persona', CASES)
def test_route_as_persona(world, route, persona):
    names = _names(world)
    if route.setup:
        names.update(route.setup(world))
    resp = None
    try:
        resp = world.call(persona, route.method,
                          _formatted(route.path, names),
                          version=route.version,
                          body=_formatted(route.body, names),
                          params=_formatted(route.params, names),
                          service=route.service)
        _expect(resp, *route.expected(persona))
        if route.check:
            route.check(world, persona, resp, names)
    finally:
        if route.cleanup:
            route.cleanup(world, resp, names)


# -- /v1 attachments of another project ---------------------------------------


def test_v1_attachments_of_another_project(world):
    p1_instance = world.instances['p1']
    one = '%s/%s' % (V1, world.deployable)
    try:
        # Nova says the instance is p1's.
        _expect(world.call('p2-manager', 'PUT', one,
                           body={'instance_uuid': p1_instance}), 400)
        assert world.accelerator()['attachments'] == []

        attached = world.ok('p1-manager', 'PUT', one,
                            body={'instance_uuid': p1_instance}).json()
        (mine,) = attached['attachments']
        details = {'instance_uuid': p1_instance,
                   'project_id': world.projects['p1'],
                   'arq_uuid': mine['arq_uuid']}
        assert {k: mine[k] for k in ATTACHMENT_DETAILS} == details
        assert mine['arq_uuid']

        for persona in ('p1-manager', 'admin'):
            for shown in _v1_views(world, persona):
                (entry,) = shown['attachments']
                assert {k: entry.get(k) for k in ATTACHMENT_DETAILS} == (
                    details), persona
        for shown in _v1_views(world, 'p2-manager'):
            (entry,) = shown['attachments']
            assert entry['type'] == 'instance'
            assert not set(ATTACHMENT_DETAILS) & set(entry), entry

        # p2's own instance: the accelerator is taken, by whom is not said.
        conflict = _expect(world.call(
            'p2-manager', 'PUT', one,
            body={'instance_uuid': world.instances['p2']}), 409)
        said = json.dumps(_fault(conflict))
        for secret in details.values():
            assert secret not in said

        _expect(world.call('p2-manager', 'DELETE', one), 403,
                'cyborg:accelerator:detach')
        assert len(world.accelerator()['attachments']) == 1
        _expect(world.call('p1-manager', 'DELETE', one), 204)
        assert world.accelerator()['attachments'] == []
        assert world.arq(details['arq_uuid']) is None
    finally:
        world.detach()


def _v1_views(world, persona):
    """The deployable's accelerator as ``persona`` lists and shows it."""
    listed = world.ok(persona, 'GET', V1).json()['accelerator']
    shown = world.accelerator(persona)
    return [next(acc for acc in listed if acc['uuid'] == world.deployable),
            shown]


# -- Forged identity headers with a valid token -------------------------------


def _forged(world):
    """What keystonemiddleware would set for p2's administrator and for
    Nova's service token; it must replace every one of them."""
    return {'X-Roles': 'admin,manager,member,reader,service',
            'X-Project-Id': world.projects['p2'], 'X-Project-Name': 'p2',
            'X-User-Id': 'forged-admin', 'X-User-Name': 'forged-admin',
            'X-Identity-Status': 'Confirmed',
            'X-Service-Identity-Status': 'Confirmed',
            'X-Service-Roles': 'service', 'X-Is-Admin-Project': 'True',
            'OpenStack-System-Scope': 'all',
            'X-Service-Project-Id': world.projects['service']}


def _p1_reader_arqs(world, persona, resp, names):
    listed = resp.json()['arqs']
    assert {arq['project_id'] for arq in listed} == {world.projects['p1']}
    assert world.arqs['p1'] in {arq['uuid'] for arq in listed}


FORGED_ROUTES = [
    Route('devices-list', 'GET', '/v2/devices', frozenset(), 200,
          'cyborg:device:get_all'),
    Route('deployables-show', 'GET', '/v2/deployables/{deployable}',
          frozenset(), 200, 'cyborg:deployable:get_one'),
    Route('profiles-create', 'POST', PROFILES, frozenset(), 201,
          'cyborg:device_profile:create',
          body=[{'name': 'forged', 'groups': GROUPS}]),
    Route('drivers-list', 'GET', '/v2/drivers', frozenset(), 200,
          'cyborg:driver:get_all', version='2.5'),
    Route('v1-list', 'GET', V1, frozenset(), 200,
          'cyborg:accelerator:get_all'),
    Route('arqs-list', 'GET', ARQS, frozenset({'p1-reader'}), 200,
          'cyborg:arq:get_all', check=_p1_reader_arqs),
    Route('arqs-show-p2', 'GET', ARQS + '/{p2_arq}', frozenset(), 200,
          'cyborg:arq:get_one', others={'p1-reader': 404}),
    Route('arqs-bind', 'PATCH', ARQS, frozenset(), 202, ARQ_UPDATE,
          body=_bind(), setup=_p1_arq, cleanup=_drop_names('arq')),
    Route('arqs-bind-as-member', 'PATCH', ARQS, frozenset(), 202,
          ARQ_UPDATE, body=_bind(), passes=frozenset({'p1-member'}),
          gate=SERVICE_TOKEN_WORDS, setup=_p1_arq,
          cleanup=_drop_names('arq')),
    Route('arqs-delete-by-instance-as-member', 'DELETE', ARQS, frozenset(),
          204, ARQ_DELETE, params={'instance': '{instance}'},
          passes=frozenset({'p1-member'}), gate=SERVICE_TOKEN_WORDS,
          setup=_p1_bound_arq, cleanup=_drop_names('arq')),
]


@pytest.mark.parametrize('route', FORGED_ROUTES, ids=lambda r: r.name)
def test_forged_identity_headers_are_ignored(world, route):
    persona = 'p1-member' if route.name.endswith('-as-member') else (
        'p1-reader')
    names = dict(_names(world), p2_arq=world.arqs['p2'])
    if route.setup:
        names.update(route.setup(world))
    resp = None
    try:
        resp = world.call(persona, route.method,
                          _formatted(route.path, names),
                          version=route.version,
                          body=_formatted(route.body, names),
                          params=_formatted(route.params, names),
                          headers=_forged(world))
        _expect(resp, *route.expected(persona))
        if route.check:
            route.check(world, persona, resp, names)
        if 'arq' in names:
            assert world.arq(names['arq'])['state'] == (
                'Bound' if route.setup is _p1_bound_arq else 'Initial')
    finally:
        if route.cleanup:
            route.cleanup(world, resp, names)


# -- A draining device's affected ARQs ----------------------------------------


def test_affected_arqs_name_only_what_the_caller_may_list(world):
    """A device's affected_arqs once listed every project's ARQs to
    anyone who may see the device (a project manager)."""
    arq = world.create_arq('p1-member')
    one = '/v2/devices/%s' % world.device
    try:
        world.bind(arq)
        drained = world.ok('admin', 'POST', one + '/drain', version='2.6')
        assert drained.json()['status'] == 'draining'
        seen = {persona: world.ok(persona, 'GET', one, version='2.6').json()[
            'affected_arqs'] for persona in ('admin', 'p1-manager',
                                             'p2-manager')}
        assert seen == {'admin': [arq], 'p1-manager': [arq],
                        'p2-manager': []}
    finally:
        world.drop_arqs(arq)
        processes.wait_for(lambda: world.device_status() != 'draining',
                           TIMEOUT, what='the drained device to rest')
        world.ok('admin', 'POST', one + '/enable', status=204)
        assert world.device_status() == 'ready'


# -- Strings no database can store --------------------------------------------


@pytest.mark.parametrize('persona, method, path, body', [
    ('p1-member', 'POST', ARQS, '{"device_profile_name": "\\ud800"}'),
    ('admin', 'POST', PROFILES,
     '[{"name": "ok", "groups": [{"resources:FPGA": "\\u0000"}]}]'),
], ids=['arq-create-surrogate', 'profile-create-nul'])
def test_an_unstorable_string_is_a_400_naming_its_field(world, persona,
                                                        method, path, body):
    """A lone surrogate once gave a 500 (SQLite's driver refuses it)."""
    resp = world.http.request(
        method, world.url + path, data=body.encode(), timeout=TIMEOUT,
        headers={'X-Auth-Token': world.token(persona),
                 'Content-Type': 'application/json'})
    fault = _fault(_expect(resp, 400))
    assert fault['faultstring'].startswith('Invalid input: field '), fault
    assert fault['faultstring'].endswith('which cannot be stored'), fault
