"""Nova's calls for a server boot, replayed on both deployments."""

import time
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
import pytest

from cyborg import embedded_placement
from cyborg.tests import deployments
from cyborg.tests import placement as placement_helpers
from cyborg.tests import processes

pytestmark = pytest.mark.functional

TIMEOUT = 60
STACK_HANDLES = 4
OPERATOR = {'X-Roles': 'admin', 'X-Project-Id': 'operators',
            'X-User-Id': 'operator'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
PLACEMENT_VERSION = '1.36'
EVENT = 'accelerator-request-bound'
PCI_KEYS = {'domain', 'bus', 'device', 'function'}
RESOLVED = {'Bound', 'BindFailed', 'Deleting'}


# --- The two deployments -----------------------------------------------------


class Cloud:
    """A running deployment, its fake device made ready for instances."""

    def __init__(self, deployment):
        self.url = deployment.url
        self.host = deployment.host
        self.conductor = deployment.conductor
        self.placement = embedded_placement.client_for(
            deployment.placement_url)
        self.operator = _adapter(self.url, OPERATOR)
        deployable = processes.wait_for(self._deployable, TIMEOUT,
                                        what='the fake deployable')
        self.handles = deployable['num_accelerators']
        self.root = self.placement.provider_by_name(self.host)['uuid']
        self.provider = self._activate(deployable)

    def wait_logged(self, text):
        """Wait until the conductor logs ``text``."""
        processes.wait_for(lambda: text in self.conductor.log(), TIMEOUT,
                           what='the conductor to log %r' % text)

    def _deployable(self):
        try:
            resp = self.operator.get('/deployables', raise_exc=False)
        except ks_exc.ConnectionError:
            return None
        if resp.status_code != 200:
            return None
        found = [d for d in resp.json()['deployables']
                 if d['name'] == '%s_FakeDevice' % self.host]
        return found[0] if found and found[0]['rp_uuid'] else None

    def _activate(self, deployable):
        """The operator readies the device; Placement then offers it."""
        devices = self.operator.get('/devices').json()['devices']
        (device,) = [d for d in devices if d['hostname'] == self.host]
        resp = self.operator.post('/devices/%s/activate' % device['uuid'],
                                  headers=V24, raise_exc=False)
        assert resp.status_code == 200, resp.text

        def offered():
            child = placement_helpers.children(self.placement, self.root).get(
                deployable['name'])
            if child and child['inventories']['FPGA']['reserved'] == 0:
                return child
            return None

        child = processes.wait_for(offered, TIMEOUT,
                                   what='the device to be free in Placement')
        assert child['uuid'] == deployable['rp_uuid']
        assert child['inventories']['FPGA']['total'] == self.handles
        return child['uuid']

    def profile(self, *amounts):
        """A device profile of a group of fake FPGAs per amount."""
        name = 'nova-%s' % uuid.uuid4().hex[:8]
        resp = self.operator.post('/device_profiles', json=[{
            'name': name, 'groups': [{
                'resources:FPGA': str(amount),
                'trait:CUSTOM_FAKE_DEVICE': 'required'}
                for amount in amounts]}], raise_exc=False)
        assert resp.status_code == 201, resp.text
        return name

    def schedule(self, groups, instance, project):
        """Nova's scheduler: candidates on this host, then the claim.

        :returns: requester id -> provider uuid, as Nova's request spec
            maps each device profile group.
        """
        params = {}
        for index, group in enumerate(groups):
            suffix = '_device_profile_%d' % index
            params['resources' + suffix] = ','.join(
                '%s:%s' % (key.split(':', 1)[1], value)
                for key, value in group.items()
                if key.startswith('resources:'))
            required = ','.join(
                key.split(':', 1)[1] for key, value in group.items()
                if key.startswith('trait:') and value == 'required')
            if required:
                params['required' + suffix] = required
            params['in_tree' + suffix] = self.root
        if len(groups) > 1:
            params['group_policy'] = 'none'
        adapter = self.placement.adapter
        resp = adapter.get('/allocation_candidates', params=params,
                           microversion=PLACEMENT_VERSION)
        (claim, *_rest) = resp.json()['allocation_requests']
        body = dict(claim, consumer_generation=None, project_id=project,
                    user_id='nova-user')
        adapter.put('/allocations/%s' % instance, json=body,
                    microversion=PLACEMENT_VERSION)
        return {requester.lstrip('_'): providers[0]
                for requester, providers in claim['mappings'].items()}

    def unclaim(self, instance):
        self.placement.adapter.delete('/allocations/%s' % instance,
                                      raise_exc=False)


def _adapter(url, headers):
    """A keystoneauth1 adapter for the accelerator service, as Nova's.

    The identity headers are what keystonemiddleware sets from the tokens
    Nova sends; the noauth API takes them as they come.
    """
    session = ks_session.Session(auth=noauth.NoAuth())
    return ks_adapter.Adapter(session, service_type='accelerator',
                              endpoint_override=url + '/v2',
                              additional_headers=headers)


class Nova:
    """The calls of nova/accelerator/cyborg.py, one method each."""

    def __init__(self, cloud, service_token=True):
        self.project = 'tenant-%s' % uuid.uuid4().hex[:8]
        # NOTE(tests): a member's token, which Keystone expands with the
        # implied reader role, plus Nova's service token.
        headers = {'X-Roles': 'member,reader', 'X-Project-Id': self.project,
                   'X-User-Id': 'nova-user'}
        if service_token:
            headers.update({'X-Service-Roles': 'service',
                            'X-Service-User-Id': 'nova',
                            'X-Service-Project-Id': 'service'})
        self.client = _adapter(cloud.url, headers)

    def device_profiles(self, name):
        resp = self.client.get('/device_profiles', params={'name': name})
        assert 'OpenStack-API-Version' not in resp.request.headers
        assert resp.headers['OpenStack-API-Version'] == 'accelerator 2.0'
        return resp.json()['device_profiles']

    def create_arqs(self, name):
        return self.client.post('/accelerator_requests',
                                json={'device_profile_name': name},
                                raise_exc=False)

    def bind_arqs(self, bindings):
        patch = {arq: [{'path': '/' + field, 'op': 'add', 'value': value}
                       for field, value in binding.items()]
                 for arq, binding in bindings.items()}
        return self.client.patch('/accelerator_requests', json=patch,
                                 raise_exc=False)

    def resolved(self, instance):
        """The ARQs once all are resolved; None while 423 (still binding).
        """
        resp = self.client.get('/accelerator_requests', raise_exc=False,
                               params={'instance': instance,
                                       'bind_state': 'resolved'})
        if resp.status_code == 423:
            return None
        assert resp.status_code == 200, resp.text
        return resp.json()['arqs']

    def arqs_for_instance(self, instance, only_resolved=False):
        arqs = self.client.get('/accelerator_requests',
                               params={'instance': instance}).json()['arqs']
        if only_resolved:
            arqs = [a for a in arqs if a['state'] in RESOLVED]
        return arqs

    def arq(self, uuid):
        return self.client.get('/accelerator_requests/%s' % uuid).json()

    def delete_arqs_for_instance(self, instance):
        return self.client.delete('/accelerator_requests', raise_exc=False,
                                  params={'instance': instance})

    def delete_arqs_by_uuid(self, uuids):
        return self.client.delete('/accelerator_requests', raise_exc=False,
                                  params={'arqs': ','.join(uuids)})


# --- Fixtures ----------------------------------------------------------------


@pytest.fixture(scope='module')
def nova_api():
    with deployments.FakeNova() as fake:
        yield fake


@pytest.fixture(scope='module', params=deployments.KINDS)
def cloud(request, nova_api, tmp_path_factory):
    with deployments.start(request.param,
                           tmp_path_factory.mktemp(request.param),
                           handles=STACK_HANDLES,
                           sections={'nova': nova_api.section()}) as found:
        yield Cloud(found)


# --- Helpers -----------------------------------------------------------------


def _boot(cloud, nova, profile, instance):
    """Nova's boot up to the resolved ARQs; returns them and the bindings."""
    (dp,) = nova.device_profiles(profile)
    groups = dp['groups']
    mapping = cloud.schedule(groups, instance, nova.project)
    created = nova.create_arqs(profile)
    assert created.status_code == 201, created.text
    arqs = created.json()['arqs']
    assert len(arqs) == sum(int(v) for g in groups for k, v in g.items()
                            if k.startswith('resources:'))
    assert {a['state'] for a in arqs} == {'Initial'}
    bindings = {arq['uuid']: {
        'hostname': cloud.host,
        'device_rp_uuid': mapping['device_profile_%d'
                                  % arq['device_profile_group_id']],
        'instance_uuid': instance} for arq in arqs}
    resp = nova.bind_arqs(bindings)
    assert resp.status_code == 202, resp.text
    resolved = processes.wait_for(lambda: nova.resolved(instance), TIMEOUT,
                                  interval=0.05, what='resolved ARQs')
    return resolved, bindings


def _check_bound(cloud, resolved, bindings):
    assert {a['uuid'] for a in resolved} == set(bindings)
    for arq in resolved:
        binding = bindings[arq['uuid']]
        assert arq['state'] == 'Bound', arq
        assert (arq['hostname'], arq['device_rp_uuid'],
                arq['instance_uuid']) == (binding['hostname'],
                                          binding['device_rp_uuid'],
                                          binding['instance_uuid'])
        assert arq['device_rp_uuid'] == cloud.provider
        assert arq['attach_handle_type'] == 'TEST_PCI'
        assert set(arq['attach_handle_info']) == PCI_KEYS, arq
    addresses = {tuple(sorted(a['attach_handle_info'].items()))
                 for a in resolved}
    assert len(addresses) == len(resolved), 'a handle was given twice'


def _check_events(nova_api, instance, expected):
    """Nova got one event per ARQ; ``expected``: ARQ uuid -> status."""
    found = nova_api.wait_events(instance, len(expected))
    events = [event for _headers, batch in found for event in batch]
    assert sorted((e['tag'], e['status']) for e in events) == sorted(
        expected.items())
    assert {e['name'] for e in events} == {EVENT}
    assert {e['server_uuid'] for e in events} == {instance}
    for headers, _batch in found:
        assert headers['OpenStack-API-Version'] == 'compute 2.82'
        assert headers['X-OpenStack-Nova-API-Version'] == '2.82'
        assert headers['Content-Type'] == 'application/json'


def _shutdown(cloud, nova, instance):
    """Nova's instance delete: ARQs of the instance, then its allocation."""
    resp = nova.delete_arqs_for_instance(instance)
    assert resp.status_code == 204, resp.text
    cloud.unclaim(instance)
    assert nova.arqs_for_instance(instance) == []


# --- Tests -------------------------------------------------------------------


def test_boot_binds_tells_nova_and_delete_frees_the_handles(cloud, nova_api):
    nova = Nova(cloud)
    profile = cloud.profile(1, 1)
    instance = str(uuid.uuid4())

    resolved, bindings = _boot(cloud, nova, profile, instance)
    _check_bound(cloud, resolved, bindings)
    assert sorted(a['device_profile_group_id'] for a in resolved) == [0, 1]
    assert {a['project_id'] for a in resolved} == {nova.project}
    assert {a['device_profile_name'] for a in resolved} == {profile}
    # NOTE(tests): the instance has no host yet, so Nova answers 207 with
    # 422 for every event, which Cyborg must take as delivered.
    _check_events(nova_api, instance, {uuid: 'completed'
                                       for uuid in bindings})
    cloud.wait_logged('for instance %s (HTTP 207)' % instance)
    # Nova's compute reads them again with its client-side filter.
    assert {a['uuid'] for a in nova.arqs_for_instance(
        instance, only_resolved=True)} == set(bindings)
    for arq in resolved:
        got = nova.arq(arq['uuid'])
        assert {k: got[k] for k in arq if k != 'links'} == {
            k: v for k, v in arq.items() if k != 'links'}

    _shutdown(cloud, nova, instance)

    # A second boot takes every handle, so each one was freed.
    again = str(uuid.uuid4())
    nova_api.on_host.add(again)
    resolved, bindings = _boot(cloud, nova, cloud.profile(cloud.handles),
                               again)
    _check_bound(cloud, resolved, bindings)
    assert len(resolved) == cloud.handles
    _check_events(nova_api, again, {uuid: 'completed' for uuid in bindings})
    cloud.wait_logged('for instance %s (HTTP 200)' % again)
    _shutdown(cloud, nova, again)


def test_unknown_device_profile(cloud):
    nova = Nova(cloud)
    name = 'missing-%s' % uuid.uuid4().hex[:8]
    # NOTE(tests): Nova fails the boot on an empty list, before any ARQ.
    assert nova.device_profiles(name) == []
    resp = nova.create_arqs(name)
    assert resp.status_code == 404, resp.text


def test_bind_without_a_free_handle_fails(cloud, nova_api):
    nova = Nova(cloud)
    holder = str(uuid.uuid4())
    resolved, bindings = _boot(cloud, nova, cloud.profile(cloud.handles),
                               holder)
    _check_bound(cloud, resolved, bindings)

    # NOTE(tests): Placement has no room left either, so the binding is
    # Nova's without a claim: Cyborg and Placement disagreeing (a race).
    instance = str(uuid.uuid4())
    nova_api.on_host.add(instance)
    profile = cloud.profile(1)
    assert len(nova.device_profiles(profile)) == 1
    (arq,) = nova.create_arqs(profile).json()['arqs']
    resp = nova.bind_arqs({arq['uuid']: {'hostname': cloud.host,
                                         'device_rp_uuid': cloud.provider,
                                         'instance_uuid': instance}})
    assert resp.status_code == 202, resp.text
    (failed,) = processes.wait_for(lambda: nova.resolved(instance), TIMEOUT,
                                   what='the resolved ARQ')
    assert failed['uuid'] == arq['uuid']
    assert failed['state'] == 'BindFailed'
    assert (failed['attach_handle_type'], failed['attach_handle_info']) == (
        '', {})
    _check_events(nova_api, instance, {arq['uuid']: 'failed'})

    # Nova cleans up ARQs that failed to bind by uuid, logging any error.
    resp = nova.delete_arqs_by_uuid([arq['uuid']])
    assert resp.status_code == 204, resp.text
    resp = nova.delete_arqs_by_uuid([arq['uuid']])
    assert resp.status_code == 404, resp.text
    assert nova.arqs_for_instance(instance) == []
    # The holder's handles were untouched by the failed bind.
    assert {a['state'] for a in nova.arqs_for_instance(holder)} == {'Bound'}
    _shutdown(cloud, nova, holder)


def test_bind_and_delete_need_nova_service_token(cloud):
    user = Nova(cloud, service_token=False)
    profile = cloud.profile(1)
    (arq,) = user.create_arqs(profile).json()['arqs']
    instance = str(uuid.uuid4())
    resp = user.bind_arqs({arq['uuid']: {'hostname': cloud.host,
                                         'device_rp_uuid': cloud.provider,
                                         'instance_uuid': instance}})
    assert resp.status_code == 403, resp.text
    assert user.arq(arq['uuid'])['state'] == 'Initial'
    resp = user.delete_arqs_for_instance(instance)
    assert resp.status_code == 403, resp.text
    # An unbound ARQ is the user's own to delete.
    resp = user.delete_arqs_by_uuid([arq['uuid']])
    assert resp.status_code == 204, resp.text


def test_delete_for_an_instance_without_arqs(cloud):
    resp = Nova(cloud).delete_arqs_for_instance(str(uuid.uuid4()))
    assert resp.status_code == 204, resp.text


def test_bind_to_a_provider_without_deployable(cloud, nova_api):
    nova = Nova(cloud)
    (arq,) = nova.create_arqs(cloud.profile(1)).json()['arqs']
    instance = str(uuid.uuid4())
    # NOTE(tests): the compute node's own provider, which no deployable
    # has, as a Nova mixing up its request group mappings would send.
    resp = nova.bind_arqs({arq['uuid']: {'hostname': cloud.host,
                                         'device_rp_uuid': cloud.root,
                                         'instance_uuid': instance}})
    assert resp.status_code == 400, resp.text
    assert nova.arq(arq['uuid'])['state'] == 'Initial'
    assert nova.arqs_for_instance(instance) == []
    assert nova_api.events_of(instance) == []
    resp = nova.delete_arqs_by_uuid([arq['uuid']])
    assert resp.status_code == 204, resp.text


def test_nova_refusing_the_event_keeps_the_binding(cloud, nova_api):
    nova = Nova(cloud)
    instance = str(uuid.uuid4())
    nova_api.gone.add(instance)
    resolved, bindings = _boot(cloud, nova, cloud.profile(1), instance)
    _check_bound(cloud, resolved, bindings)
    _check_events(nova_api, instance, {uuid: 'completed'
                                       for uuid in bindings})
    cloud.wait_logged('Nova answered HTTP 404 to %s for instance %s'
                      % (EVENT, instance))
    assert {a['state'] for a in nova.arqs_for_instance(instance)} == {
        'Bound'}
    _shutdown(cloud, nova, instance)


def test_bind_answer_does_not_wait_for_nova(cloud, nova_api):
    nova = Nova(cloud)
    holder = str(uuid.uuid4())
    _boot(cloud, nova, cloud.profile(cloud.handles), holder)
    instance = str(uuid.uuid4())
    nova_api.slow[instance] = 3
    (arq,) = nova.create_arqs(cloud.profile(1)).json()['arqs']
    try:
        started = time.monotonic()
        resp = nova.bind_arqs({arq['uuid']: {
            'hostname': cloud.host, 'device_rp_uuid': cloud.provider,
            'instance_uuid': instance}})
        elapsed = time.monotonic() - started
        assert resp.status_code == 202, resp.text
        # NOTE(tests): the documented answer is 202 with the bind going on
        # in the background; Nova's API is another service, which may be
        # slow or down, and must not hold nova-conductor's PATCH.
        assert elapsed < 1.5, 'PATCH took %.1fs' % elapsed
    finally:
        _check_events(nova_api, instance, {arq['uuid']: 'failed'})
        nova.delete_arqs_by_uuid([arq['uuid']])
        _shutdown(cloud, nova, holder)


def test_no_hot_add_to_an_instance_with_arqs(cloud):
    nova = Nova(cloud)
    instance = str(uuid.uuid4())
    _boot(cloud, nova, cloud.profile(1), instance)
    (extra,) = nova.create_arqs(cloud.profile(1)).json()['arqs']
    try:
        resp = nova.bind_arqs({extra['uuid']: {
            'hostname': cloud.host, 'device_rp_uuid': cloud.provider,
            'instance_uuid': instance}})
        assert resp.status_code == 400, resp.text
    finally:
        processes.wait_for(lambda: nova.resolved(instance) is not None,
                           TIMEOUT, what='resolved ARQs')
        nova.delete_arqs_by_uuid([extra['uuid']])
        _shutdown(cloud, nova, instance)


V26 = {'OpenStack-API-Version': 'accelerator 2.6'}


def _device(cloud):
    devices = cloud.operator.get('/devices', headers=V26).json()['devices']
    (device,) = [d for d in devices if d['hostname'] == cloud.host]
    return device


def _reserved(cloud):
    child = placement_helpers.children(cloud.placement, cloud.root)
    (provider,) = [p for p in child.values() if p['uuid'] == cloud.provider]
    inventory = provider['inventories']['FPGA']
    return inventory['reserved'] == inventory['total']


def test_a_drain_waits_for_bound_arqs_and_takes_no_new_bind(cloud,
                                                             nova_api):
    nova = Nova(cloud)
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    for instance in (first, second):
        resolved, bindings = _boot(cloud, nova, cloud.profile(1), instance)
        _check_bound(cloud, resolved, bindings)
    uuid_ = _device(cloud)['uuid']
    resp = cloud.operator.post('/devices/%s/drain' % uuid_, headers=V26,
                               raise_exc=False)
    assert resp.status_code == 200, resp.text
    drained = resp.json()
    assert (drained['status'], drained['status_reason']) == (
        'draining', 'draining: 2 accelerator requests still bound')
    assert sorted(drained['affected_arqs']) == sorted(
        a['uuid'] for i in (first, second)
        for a in nova.arqs_for_instance(i))
    # Older microversions see a device in maintenance.
    old = cloud.operator.get('/devices/%s' % uuid_, headers=V24).json()
    assert old['status'] == 'maintaining'
    processes.wait_for(lambda: _reserved(cloud), TIMEOUT,
                       what='the draining device to be reserved')

    # NOTE(tests): a bind that reaches the device anyway (Nova's claim
    # made just before the drain) fails; the instance goes elsewhere.
    late = str(uuid.uuid4())
    nova_api.on_host.add(late)
    (arq,) = nova.create_arqs(cloud.profile(1)).json()['arqs']
    resp = nova.bind_arqs({arq['uuid']: {'hostname': cloud.host,
                                         'device_rp_uuid': cloud.provider,
                                         'instance_uuid': late}})
    assert resp.status_code == 202, resp.text
    (failed,) = processes.wait_for(lambda: nova.resolved(late), TIMEOUT,
                                   what='the late bind to resolve')
    assert failed['state'] == 'BindFailed'
    assert nova.delete_arqs_by_uuid([arq['uuid']]).status_code == 204

    _shutdown(cloud, nova, first)
    device = processes.wait_for(
        lambda: (lambda d: d if d['status_reason'].startswith(
            'draining: 1 ') else None)(_device(cloud)), TIMEOUT,
        what='one ARQ left')
    assert device['status'] == 'draining'
    _shutdown(cloud, nova, second)
    device = processes.wait_for(
        lambda: (lambda d: d if d['status'] == 'maintaining' else None)(
            _device(cloud)), TIMEOUT, what='the drained device')
    assert device['status_reason'] == 'maintenance; was ready'
    assert device['affected_arqs'] == []
    assert _reserved(cloud)

    resp = cloud.operator.post('/devices/%s/enable' % uuid_,
                               raise_exc=False)
    assert resp.status_code == 204, resp.text
    assert _device(cloud)['status'] == 'ready'
    processes.wait_for(lambda: not _reserved(cloud), TIMEOUT,
                       what='the device to be offered again')


def test_drain_needs_2_6_and_a_ready_device(cloud):
    uuid_ = _device(cloud)['uuid']
    resp = cloud.operator.post('/devices/%s/drain' % uuid_, headers=V24,
                               raise_exc=False)
    assert resp.status_code == 404, resp.text
    assert 'microversion 2.6' in resp.text
    resp = cloud.operator.post('/devices/%s/disable' % uuid_,
                               raise_exc=False)
    assert resp.status_code == 204, resp.text
    try:
        resp = cloud.operator.post('/devices/%s/drain' % uuid_, headers=V26,
                                   raise_exc=False)
        assert resp.status_code == 409, resp.text
    finally:
        cloud.operator.post('/devices/%s/enable' % uuid_, raise_exc=False)
    assert _device(cloud)['status'] == 'ready'
