"""The API reference's JSON samples, produced by a running Cyborg.

Every request the API reference (``api-ref/source``) documents is sent here
to the embedded default (``cyborg-all-in-one``) whose agent runs the fake
driver, with a fake Nova for the bind events and a fake Glance for the
images, and whose agent can install the Intel FPGA driver on a simulated
host (``fpgaconf`` is a stand-in that only records its arguments). Each
request body the reference shows and each response body is compared, once
normalised, with its file under ``api-ref/source/samples/``; a difference,
a sample no request produced, or a request without its file fails the test.

Normalisation makes what changes from run to run stable, and is the only
way a sample differs from the real body:

* the API's address (``http://127.0.0.1:<random port>``) becomes
  ``http://127.0.0.1:6666``, the default port;
* the agent's host, ``aio``, becomes ``compute-1``, as a word (so
  ``aio_FakeDevice`` becomes ``compute-1_FakeDevice``);
* every UUID must have been given a role by the scenario (``device``,
  ``arq``, ``instance``...) and becomes ``uuid5(SAMPLE_NAMESPACE, role)``,
  so one object keeps one UUID across samples; an unnamed UUID fails the
  test, so that no random value slips into a sample (the ids of the
  simulated FPGAs' functions, fixed by the fixture, stay as they are);
* every timestamp becomes 2026-01-01 12:00:00, keeping its format (``T``
  or blank, microseconds, ``+00:00``); null stays null;
* Cyborg's own version (in ``GET /v2/agents``) becomes ``SAMPLE_VERSION``;
* request ids (``req-<uuid>``), and values of keys named ``generation``
  or ``request_id``, become fixed placeholders (no body carries them
  today; they are volatile if one ever does); so does a conductor's
  ``clock_skew``, measured anew at each heartbeat.

Run with ``CYBORG_REGENERATE_SAMPLES=1`` to rewrite the samples from the
API instead of failing (stale sample files are then removed), and review
the diff like code.
"""

import difflib
import json
import os
import re
import sys
import uuid

import pytest
import requests

from cyborg import version as cyborg_version
from cyborg.tests import deployments
from cyborg.tests import fake_services
from cyborg.tests import processes
from cyborg.tests.fixtures import gpu_fpga_hosts
from cyborg.tests.fixtures import pci_hosts

pytestmark = pytest.mark.functional

SAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                       os.pardir, 'api-ref', 'source', 'samples')
REGENERATE = os.environ.get('CYBORG_REGENERATE_SAMPLES') == '1'
TIMEOUT = 60

SAMPLE_NAMESPACE = uuid.UUID('5f0c5e8e-6a1b-4c47-9b1e-2d6a3f8c9e01')
SAMPLE_URL = 'http://127.0.0.1:6666'
SAMPLE_HOST = 'compute-1'
SAMPLE_VERSION = '18.0.0'
SAMPLE_DATE = '2026-01-01'
SAMPLE_TIME = '12:00:00'

LATEST = '2.5'
LIMITS_VERSION = '2.7'
EXPLAIN_VERSION = '2.8'
CONDUCTORS_VERSION = '2.11'
ERRORS_VERSION = '2.12'
PROJECT = '6f3c8a9e2b4d4f1a8c7e5d3b2a1f0e9d'
ADMIN = {'X-User-Id': 'admin', 'X-Project-Id': PROJECT,
         'X-Roles': 'admin,member,reader'}
# NOTE(samples): what keystonemiddleware passes on for Nova's calls: a
# member's token and Nova's service token.
NOVA = {'X-User-Id': 'nova', 'X-Project-Id': PROJECT,
        'X-Roles': 'member,reader', 'X-Service-Roles': 'service'}
# NOTE(samples): a project manager's token, with the roles Keystone's
# implied roles add.
MANAGER = {'X-User-Id': 'demo', 'X-Project-Id': PROJECT,
           'X-Roles': 'manager,member,reader'}

#: Samples another module's deployment produces (a GPU with partition
#: modes: cyborg/tests/functional/test_partition_modes.py).
PRODUCED_ELSEWHERE = ('devices-mode-req.json', 'devices-mode-resp.json')

FPGA_HOST = 'fpga-host'
PRIVSEP_HELPER = os.path.join(os.path.dirname(sys.executable),
                              'privsep-helper')

_UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                   r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')
_REQUEST_ID = re.compile(r'req-' + _UUID.pattern)
_TIMESTAMP = re.compile(r'\d{4}-\d{2}-\d{2}([T ])\d{2}:\d{2}:\d{2}'
                        r'(\.\d+)?')
_VOLATILE_KEYS = {'generation': 1, 'request_id': 'req-' + str(
    uuid.uuid5(SAMPLE_NAMESPACE, 'request-id')), 'clock_skew': 0.004}


class Normaliser:
    """Turns real bodies into samples (see the module's docstring)."""

    def __init__(self, url, host):
        self.url = url.rstrip('/')
        self.host = re.compile(r'(?<![A-Za-z0-9])%s(?![A-Za-z0-9])'
                               % re.escape(host))
        self.version = cyborg_version.version_string()
        self.roles = {}

    def name(self, value, role):
        """Give the UUID ``value`` the placeholder of ``role``."""
        placeholder = str(uuid.uuid5(SAMPLE_NAMESPACE, role))
        known = self.roles.setdefault(value.lower(), placeholder)
        assert known == placeholder, '%s has two roles' % value
        return value

    def keep(self, value):
        """A UUID that is the same at every run (a fixture's) stays."""
        self.roles[value.lower()] = value
        return value

    def __call__(self, data, sample):
        if isinstance(data, dict):
            return {self(key, sample): (_VOLATILE_KEYS[key]
                                        if key in _VOLATILE_KEYS
                                        else self(value, sample))
                    for key, value in data.items()}
        if isinstance(data, list):
            return [self(item, sample) for item in data]
        if isinstance(data, str):
            return self._text(data, sample)
        return data

    def _text(self, text, sample):
        if text == self.version:
            return SAMPLE_VERSION
        text = text.replace(self.url, SAMPLE_URL)
        text = _REQUEST_ID.sub(_VOLATILE_KEYS['request_id'], text)
        text = _UUID.sub(lambda m: self._uuid(m.group(0), sample), text)
        text = _TIMESTAMP.sub(_timestamp, text)
        return self.host.sub(SAMPLE_HOST, text)

    def _uuid(self, value, sample):
        if value.lower() not in self.roles:
            raise AssertionError('%s: UUID %s has no role; name it in the '
                                 'scenario' % (sample, value))
        return self.roles[value.lower()]


def _timestamp(match):
    fraction = match.group(2)
    return '%s%s%s%s' % (SAMPLE_DATE, match.group(1), SAMPLE_TIME,
                         '.' + '0' * (len(fraction) - 1) if fraction else '')


class Samples:
    """Compares (or, regenerating, writes) the files under samples/."""

    def __init__(self, normalise):
        self.normalise = normalise
        self.checked = set()
        self.drifted = []

    def check(self, name, body):
        assert name not in self.checked, '%s produced twice' % name
        self.checked.add(name)
        text = json.dumps(self.normalise(body, name), indent=4) + '\n'
        path = os.path.join(SAMPLES, name)
        try:
            with open(path) as stored:
                old = stored.read()
        except FileNotFoundError:
            old = None
        if old == text:
            return
        if REGENERATE:
            with open(path, 'w') as out:
                out.write(text)
        elif old is None:
            self.drifted.append('%s: no such file' % name)
        else:
            diff = difflib.unified_diff(
                old.splitlines(), text.splitlines(), 'samples/' + name,
                'the API', lineterm='')
            self.drifted.append('\n'.join(diff))

    def finish(self):
        """Every sample file was produced, and none drifted."""
        stale = sorted(name for name in os.listdir(SAMPLES)
                       if name.endswith('.json') and name not in self.checked
                       and name not in PRODUCED_ELSEWHERE)
        if REGENERATE:
            for name in stale:
                os.unlink(os.path.join(SAMPLES, name))
            return
        problems = self.drifted + ['%s: no request produced it' % name
                                   for name in stale]
        assert not problems, (
            'The API reference samples differ from what the API answers '
            '(CYBORG_REGENERATE_SAMPLES=1 rewrites them):\n%s'
            % '\n\n'.join(problems))


class Api:
    """Requests to the deployment; the samples of their bodies."""

    def __init__(self, deployment):
        self.url = deployment.url
        self.host = deployment.host
        self.normalise = Normaliser(self.url, self.host)
        self.samples = Samples(self.normalise)
        self.role = self.normalise.name
        self.keep = self.normalise.keep

    def send(self, method, path, body=None, identity=ADMIN, version=LATEST,
             headers=None, params=None):
        """The response to a request.

        :param version: the microversion; None sends no header.
        """
        sent = dict(identity, **(headers or {}))
        if version is not None:
            sent['OpenStack-API-Version'] = 'accelerator %s' % version
        return requests.request(method, self.url + path, headers=sent,
                                params=params, json=body, timeout=TIMEOUT)

    def call(self, method, path, status, body=None, request_sample=None,
             sample=None, **options):
        """Send a request, check its status; compare its samples.

        :param request_sample: the sample file of ``body``.
        :param sample: the sample file of the response's body.
        :param options: those of ``send``.
        """
        if request_sample is not None:
            self.samples.check(request_sample, body)
        resp = self.send(method, path, body, **options)
        assert resp.status_code == status, '%s %s answered %s: %s' % (
            method, path, resp.status_code, resp.text)
        if sample is not None:
            self.samples.check(sample, resp.json())
        elif status in (202, 204):
            assert resp.content == b'', resp.content
        return resp


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('api-samples')
    fpgaconf, record = gpu_fpga_hosts.fake_tool(tmp, 'fpgaconf')
    with deployments.FakeNova() as nova, \
            fake_services.serve_glance() as glance:
        sections = {
            'agent': {'enabled_drivers': 'fake_driver',
                      'sysfs_root': pci_hosts.committed(FPGA_HOST)},
            'fpga': {'fpgaconf_path': fpgaconf},
            'glance': {'auth_type': 'admin_token', 'endpoint': glance.url,
                       'token': 'glance-token'},
            'nova': nova.section(),
            # NOTE(samples): fpgaconf runs through a privsep daemon
            # started without sudo (the tests run as root).
            'cyborg_sys_admin': {'helper_command': PRIVSEP_HELPER},
            # NOTE(samples): a limit to show in GET /v2/limits and to go
            # over once; nothing else asks for more than it. A /v1 attach
            # takes its whole deployable: all 16 of its units.
            'quota': {'limits': 'FPGA:16'},
        }
        with deployments.all_in_one(tmp, sections=sections) as found:
            found.glance = glance
            found.nova = nova
            found.fpgaconf_record = record
            yield found


# --- The scenario, resource by resource -------------------------------------


def _versions(api):
    api.call('GET', '/', 200, version=None, identity={},
             sample='versions-list-resp.json')
    api.call('GET', '/v2', 200, version=None, identity={},
             sample='version-v2-resp.json')
    missing = api.role(str(uuid.uuid4()), 'missing-device')
    api.call('GET', '/v2/devices/%s' % missing, 404,
             sample='error-resp.json')
    api.call('GET', '/v2/devices/%s' % missing, 404, version=ERRORS_VERSION,
             sample='error-code-resp.json')


def _devices(api):
    listed = api.call('GET', '/v2/devices', 200).json()
    (device,) = listed['devices']
    api.role(device['uuid'], 'device')
    api.samples.check('devices-list-resp.json', listed)
    one = '/v2/devices/%s' % device['uuid']
    api.call('GET', one, 200, sample='device-show-resp.json')
    api.call('POST', one + '/activate', 200,
             sample='device-activate-resp.json')
    api.call('POST', one + '/disable', 204)
    assert api.call('GET', one, 200).json()['status'] == 'maintaining'
    api.call('POST', one + '/enable', 204)
    assert api.call('GET', one, 200).json()['status'] == 'ready'
    return device


def _agents(api):
    api.call('GET', '/v2/agents', 200, sample='agents-list-resp.json')


def _conductors(api):
    api.call('GET', '/v2/conductors', 200, version=CONDUCTORS_VERSION,
             sample='conductors-list-resp.json')


def _deployables(api):
    listed = api.call('GET', '/v2/deployables', 200).json()
    (deployable,) = listed['deployables']
    api.role(deployable['uuid'], 'deployable')
    api.role(deployable['rp_uuid'], 'deployable-provider')
    api.samples.check('deployables-list-resp.json', listed)
    api.call('GET', '/v2/deployables/%s' % deployable['uuid'], 200,
             sample='deployable-show-resp.json')
    return deployable


def _attributes(api, deployable):
    listed = api.call('GET', '/v2/attributes', 200, params={
        'deployable_uuid': deployable['uuid']}).json()
    for attribute in listed['attributes']:
        api.role(attribute['uuid'], 'attribute-%s' % attribute['key'])
    api.samples.check('attributes-list-resp.json', listed)
    api.call('GET', '/v2/attributes/%s' % listed['attributes'][0]['uuid'],
             200, sample='attribute-show-resp.json')
    body = {'deployable_uuid': deployable['uuid'], 'key': 'trait_tier',
            'value': 'CUSTOM_GOLD'}
    created = api.call('POST', '/v2/attributes', 201, body,
                       request_sample='attribute-create-req.json')
    added = created.json()
    api.role(added['uuid'], 'attribute-trait_tier')
    api.samples.check('attribute-create-resp.json', added)
    assert created.headers['Location'] == added['links'][0]['href']
    api.call('DELETE', '/v2/attributes/%s' % added['uuid'], 204)


def _device_profile(api):
    body = [{'name': 'fpga-dp1', 'description': 'one fake FPGA',
             'groups': [{'resources:FPGA': '1',
                         'trait:CUSTOM_FAKE_DEVICE': 'required'}]}]
    created = api.call('POST', '/v2/device_profiles', 201, body,
                       request_sample='device-profile-create-req.json')
    profile = created.json()
    api.role(profile['uuid'], 'device-profile')
    api.samples.check('device-profile-create-resp.json', profile)
    assert created.headers['Location'] == profile['links'][0]['href']
    api.call('GET', '/v2/device_profiles', 200, params={'name': 'fpga-dp1'},
             sample='device-profiles-list-resp.json')
    api.call('GET', '/v2/device_profiles/fpga-dp1', 200,
             sample='device-profile-show-resp.json')
    return profile


def _explain(api):
    """A profile of two groups the one fake FPGA can serve one of."""
    made = api.call('POST', '/v2/device_profiles', 201, [{
        'name': 'fpga-explain', 'description': 'one FPGA with the trait, '
        'one without',
        'groups': [{'resources:FPGA': '1',
                    'trait:CUSTOM_FAKE_DEVICE': 'required'},
                   {'resources:FPGA': '1',
                    'trait:CUSTOM_FAKE_DEVICE': 'forbidden'}]}]).json()
    api.role(made['uuid'], 'explain-profile')
    explained = api.call(
        'GET', '/v2/device_profiles/fpga-explain/candidates', 200,
        version=EXPLAIN_VERSION, identity=MANAGER,
        sample='device-profile-candidates-resp.json').json()
    assert [[(c['schedulable'], c['reason']) for c in group['candidates']]
            for group in explained['groups']] == [
        [(True, None)], [(False, 'trait_forbidden')]]
    api.call('GET', '/v2/device_profiles/fpga-explain/candidates', 404,
             version=LIMITS_VERSION)
    api.call('DELETE', '/v2/device_profiles/%s' % made['uuid'], 204)


def _bind(api, arqs, deployable, instance, request_sample=None):
    body = {arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': api.host},
        {'op': 'add', 'path': '/device_rp_uuid',
         'value': deployable['rp_uuid']},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        for arq in arqs}
    api.call('PATCH', '/v2/accelerator_requests', 202, body,
             request_sample=request_sample, identity=NOVA)

    def resolved():
        resp = api.send('GET', '/v2/accelerator_requests', identity=NOVA,
                        params={'instance': instance,
                                'bind_state': 'resolved'})
        if resp.status_code == 423:
            return None
        assert resp.status_code == 200, resp.text
        return resp.json()

    return processes.wait_for(resolved, TIMEOUT, interval=0.05,
                              what='the ARQs of %s to be resolved'
                              % instance)


def _accelerator_requests(api, deployable):
    body = {'device_profile_name': 'fpga-dp1'}
    created = api.call('POST', '/v2/accelerator_requests', 201, body,
                       request_sample='arqs-create-req.json',
                       identity=NOVA).json()
    (arq,) = created['arqs']
    api.role(arq['uuid'], 'arq')
    api.samples.check('arqs-create-resp.json', created)
    _limits(api)

    instance = api.role(str(uuid.uuid4()), 'instance')
    listed = _bind(api, [arq], deployable, instance,
                   request_sample='arqs-bind-req.json')
    (bound,) = listed['arqs']
    assert bound['state'] == 'Bound', bound
    api.role(bound['attach_handle_uuid'], 'attach-handle')
    api.samples.check('arqs-list-resp.json', listed)
    one = '/v2/accelerator_requests/%s' % arq['uuid']
    api.call('GET', one, 200, identity=NOVA, sample='arq-show-resp.json')

    body = {arq['uuid']: [{'op': 'remove', 'path': '/hostname'},
                          {'op': 'remove', 'path': '/device_rp_uuid'},
                          {'op': 'remove', 'path': '/instance_uuid'}]}
    api.call('PATCH', one, 202, body, identity=NOVA,
             request_sample='arq-unbind-req.json')
    assert api.call('GET', one, 200,
                    identity=NOVA).json()['state'] == 'Unbound'
    api.call('DELETE', '/v2/accelerator_requests', 204, identity=NOVA,
             params={'arqs': arq['uuid']})
    api.call('GET', one, 404, identity=NOVA)

    # The ARQs of an instance, deleted as Nova deletes the instance.
    (again,) = api.call('POST', '/v2/accelerator_requests', 201, body={
        'device_profile_name': 'fpga-dp1'}, identity=NOVA).json()['arqs']
    other = str(uuid.uuid4())
    _bind(api, [again], deployable, other)
    api.call('DELETE', '/v2/accelerator_requests', 204, identity=NOVA,
             params={'instance': other})
    assert api.call('GET', '/v2/accelerator_requests', 200, identity=NOVA,
                    params={'instance': other}).json() == {'arqs': []}


def _limits(api):
    """The project holds one FPGA of its limit of sixteen."""
    listed = api.call('GET', '/v2/limits', 200, version=LIMITS_VERSION,
                      sample='limits-list-resp.json').json()
    assert listed['limits'] == [{'resource': 'class:FPGA',
                                 'resource_class': 'FPGA', 'limit': 16,
                                 'usage': 1}]
    # NOTE(samples): a quota error is a 403 at every microversion.
    pair = api.call('POST', '/v2/device_profiles', 201, [{
        'name': 'fpga-pair', 'groups': [{'resources:FPGA': '16'}]}]).json()
    api.call('POST', '/v2/accelerator_requests', 403,
             {'device_profile_name': 'fpga-pair'}, identity=NOVA,
             sample='arqs-create-quota-resp.json')
    api.call('DELETE', '/v2/device_profiles/%s' % pair['uuid'], 204)
    assert api.call('GET', '/v2/limits', 200, version=LIMITS_VERSION,
                    identity=NOVA).json() == listed


def _delete_device_profiles(api, profile):
    api.call('DELETE', '/v2/device_profiles/%s' % profile['uuid'], 204)
    api.call('POST', '/v2/device_profiles', 201, [{
        'name': 'fpga-dp2', 'groups': [{'resources:FPGA': '1'}]}])
    api.call('POST', '/v2/device_profiles', 201, [{
        'name': 'fpga-dp3', 'groups': [{'resources:FPGA': '2'}]}])
    api.call('DELETE', '/v2/device_profiles/fpga-dp2', 204)
    api.call('DELETE', '/v2/device_profiles', 204,
             params={'value': 'fpga-dp3'})
    assert api.call('GET', '/v2/device_profiles',
                    200).json()['device_profiles'] == []


def _v1_accelerators(api, cloud, deployable):
    body = {'name': 'ipsec-card-1'}
    created = api.call('POST', '/v1/accelerators', 201, body, version=None,
                       request_sample='accelerator-create-req.json')
    assert created.content == b''
    record = created.headers['Location'].rsplit('/', 1)[1]
    api.role(record, 'accelerator-record')
    assert created.headers['ETag'] == '"1"'
    one = '/v1/accelerators/%s' % record

    body = {'acc_specs': {'remote': 1, 'num': 2, 'device_type': 'CRYPTO',
                          'acc_capability': {'ipsec': {'aes': {
                              '3des': 50}}}}}
    updated = api.call('PUT', one + '/acc_specs', 200, body, version=None,
                       headers={'If-Match': '"1"'},
                       request_sample='accelerator-spec-update-req.json',
                       sample='accelerator-spec-update-resp.json')
    assert updated.headers['ETag'] == '"2"'

    found = '/v1/accelerators/%s' % deployable['uuid']
    shown = api.call('GET', found, 200, version=None,
                     sample='accelerator-show-resp.json')
    assert shown.headers['ETag'] == '"1"'
    instance = api.role(str(uuid.uuid4()), 'v1-instance')
    # NOTE(samples): the manager is no administrator, so the conductor
    # asks Nova whether the instance is of the manager's project.
    cloud.nova.own(instance, PROJECT)
    attached = api.call('PUT', found, 200, {'instance_uuid': instance},
                        version=None, identity=MANAGER,
                        request_sample='accelerator-attach-instance-req.json'
                        ).json()
    assert [shown['instance'] for shown in cloud.nova.shown] == [instance]
    api.role(attached['attachments'][0]['arq_uuid'], 'v1-arq')
    api.samples.check('accelerator-attach-instance-resp.json', attached)
    api.call('DELETE', found, 204, version=None, identity=MANAGER)

    api.call('PUT', one, 200, {'host': api.host}, version=None,
             request_sample='accelerator-attach-host-req.json',
             sample='accelerator-attach-host-resp.json')
    api.call('GET', '/v1/accelerators', 200, version=None,
             sample='accelerators-list-resp.json')
    api.call('DELETE', one, 204, version=None)


def _drivers_and_services(api, cloud):
    params = {'host': api.host}
    # NOTE(samples): the simulated cards' region and function ids.
    api.keep(gpu_fpga_hosts.D5005_AFU)
    api.keep(gpu_fpga_hosts.A10_INTERFACE)
    api.call('GET', '/v2/drivers', 200, params=params,
             sample='drivers-list-resp.json')
    body = {'host': api.host, 'name': 'intel_fpga_driver'}
    installed = api.call('POST', '/v2/drivers', 201, body,
                         request_sample='driver-install-req.json',
                         sample='driver-install-resp.json')
    assert installed.headers['Location'].endswith(
        '/v2/drivers/%s/intel_fpga_driver' % api.host)
    fpga = None
    for device in api.call('GET', '/v2/devices', 200,
                           params={'vendor': '0x8086'}).json()['devices']:
        api.role(device['uuid'], 'device-' + device['model'])
    for deployable in api.call('GET', '/v2/deployables', 200).json()[
            'deployables']:
        if deployable['driver_name'] == 'intel_fpga':
            api.role(deployable['uuid'], deployable['name'])
            api.role(deployable['rp_uuid'],
                          deployable['name'] + '-provider')
            if deployable['num_accelerators'] == 2:
                fpga = deployable
    assert fpga is not None
    api.call('GET', '/v2/services', 200, params=params,
             sample='services-list-resp.json')
    api.call('POST', '/v2/services/discover', 200, {'host': api.host},
             request_sample='services-discover-req.json',
             sample='services-discover-resp.json')

    image = api.role(cloud.glance.add(name='pac-a10-green.gbs'),
                          'image')
    body = [{'op': 'replace', 'path': '/program',
             'value': [{'image_uuid': image}]}]
    api.call('PATCH', '/v2/deployables/%s/program' % fpga['uuid'], 200,
             body, request_sample='deployable-program-req.json',
             sample='deployable-program-resp.json')
    assert gpu_fpga_hosts.recorded_argv(cloud.fpgaconf_record)[:6] == [
        '--bus', '0x5e', '--device', '0x00', '--function', '0x0']
    one = '/v2/drivers/%s/intel_fpga_driver' % api.host
    api.call('PATCH', one, 200, {'image_uuid': image},
             request_sample='driver-update-req.json',
             sample='driver-update-resp.json')
    api.call('DELETE', one, 204)
    drivers = api.call('GET', '/v2/drivers', 200, params=params).json()
    assert {d['name']: d['enabled'] for d in drivers['drivers']}[
        'intel_fpga_driver'] is False


def test_samples_are_what_the_api_answers(cloud):
    api = Api(cloud)
    _versions(api)
    _devices(api)
    _agents(api)
    _conductors(api)
    deployable = _deployables(api)
    _attributes(api, deployable)
    profile = _device_profile(api)
    _explain(api)
    _accelerator_requests(api, deployable)
    _delete_device_profiles(api, profile)
    _v1_accelerators(api, cloud, deployable)
    _drivers_and_services(api, cloud)
    api.samples.finish()
    assert 'Traceback' not in cloud.conductor.log()
