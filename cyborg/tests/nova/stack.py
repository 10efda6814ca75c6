"""The whole stack the real Nova runs on, every process real but Neutron.

Keystone, Placement and Glance (from PyPI), Cyborg's API, conductor and
one agent per compute host, and Nova's API, conductor, scheduler and one
nova-compute per host (``fake.FakeDriverWithoutFakeNodes``), all on
MariaDB and one RabbitMQ vhost, every service behind Keystone and found
through its catalog. Neutron is the stand-in of
``cyborg.tests.nova.neutron``.
"""

import configparser
import contextlib
import os
import subprocess

import requests

from cyborg.tests import backends
from cyborg.tests import keystone as keystone_mod
from cyborg.tests import processes
from cyborg.tests.nova import neutron as neutron_mod
from cyborg.tests.nova import services
from cyborg.tests.nova import wsgi

TIMEOUT = 180
COMPUTE_VERSION = '2.95'
PROFILE = 'fpga'
RESOURCE_CLASS = 'FPGA'
TRAIT = 'CUSTOM_FAKE_DEVICE'
DATABASES = ('api', 'cell0', 'cell1', 'placement', 'glance', 'cyborg')


class NovaStack:
    """``with NovaStack(workdir) as stack``: everything started.

    :param hosts: compute hosts, each with a nova-compute and a
        cyborg-agent whose fake driver has ``devices`` devices of
        ``handles`` MDEV handles.
    :param sections: added to every Cyborg configuration file.
    """

    def __init__(self, workdir, hosts=('compute-1', 'compute-2'), devices=1,
                 handles=2, sections=None):
        self.workdir = str(workdir)
        self.hosts = list(hosts)
        self.devices = devices
        self.handles = handles
        self.sections = sections or {}
        self.procs = []
        self.agents = {}
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info):
        for proc in reversed(self.procs):
            # NOTE(nova): one that had to be killed says so in its log;
            # the others are still stopped.
            with contextlib.suppress(AssertionError):
                proc.stop(timeout=30)
        self._stack.close()

    def _start(self):
        enter = self._stack.enter_context
        venvs = keystone_mod.build_venvs('keystone', 'nova')
        self.venv = venvs['nova']
        self.keystone = enter(keystone_mod.Keystone(
            venvs['keystone'], os.path.join(self.workdir, 'keystone')))
        self.databases = {name: enter(backends.temp_database('mysql'))
                          for name in DATABASES}
        self.transport_url = enter(backends.temp_rabbit_vhost())
        self.neutron = enter(neutron_mod.Neutron())
        self.keystone.register('network', 'neutron', self.neutron.url)
        self.placement = self._wsgi('placement-api', {
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': self.keystone.authtoken_options(
                'placement'),
            'placement_database': {
                'connection': self.databases['placement'],
                'sync_on_startup': 'true'}})
        self.keystone.register('placement', 'placement', self.placement.url)
        self._start_glance()
        self._start_cyborg()
        self.nova = enter(services.Nova(
            self.venv, self.keystone, self.workdir, self.transport_url,
            self.databases, self.hosts))
        for host in self.hosts:
            self.start_agent(host)
        self.wait_inventory()
        self.profile = self.cyborg('POST', '/v2/device_profiles', json=[{
            'name': PROFILE, 'groups': [{
                'resources:%s' % RESOURCE_CLASS: '1',
                'trait:%s' % TRAIT: 'required'}]}])
        self.flavor = self.flavor_with(PROFILE)
        self.plain_flavor = self.flavor_with(None, name='plain')

    # --- Starting -------------------------------------------------------

    def _wsgi(self, service, sections):
        proc = wsgi.WsgiService(service, self.venv, sections, self.workdir)
        self.procs.append(proc)
        return proc.wait_listening()

    def _start_glance(self):
        directory = os.path.join(self.workdir, 'glance')
        sections = {
            'DEFAULT': {'enabled_backends': 'fs:file'},
            'glance_store': {'default_backend': 'fs'},
            'fs': {'filesystem_store_datadir': os.path.join(directory,
                                                            'images')},
            'os_glance_staging_store': {'filesystem_store_datadir':
                                        os.path.join(directory, 'staging')},
            'os_glance_tasks_store': {'filesystem_store_datadir':
                                      os.path.join(directory, 'tasks')},
            'database': {'connection': self.databases['glance']},
            'keystone_authtoken': self.keystone.authtoken_options('glance'),
            'paste_deploy': {'flavor': 'keystone'},
        }
        os.makedirs(directory, exist_ok=True)
        conf = processes.write_config(
            os.path.join(directory, 'glance-api.conf'), sections)
        synced = subprocess.run(
            [os.path.join(self.venv, 'bin', 'glance-manage'),
             '--config-file', conf, 'db_sync'],
            capture_output=True, text=True, timeout=TIMEOUT,
            stdin=subprocess.DEVNULL)
        assert synced.returncode == 0, synced.stderr[-6000:]
        self.glance = self._wsgi_in('glance-api', sections, directory)
        self.keystone.register('image', 'glance', self.glance.url)
        self.image = self._upload_image()

    def _wsgi_in(self, service, sections, directory):
        proc = wsgi.WsgiService(service, self.venv, sections, self.workdir,
                                config_dir=directory)
        self.procs.append(proc)
        return proc.wait_listening()

    def _upload_image(self):
        session = self.keystone.session(keystone_mod.ADMIN)
        image = session.post(self.glance.url + '/v2/images', json={
            'name': 'tiny', 'disk_format': 'raw', 'container_format': 'bare',
            'visibility': 'public'}).json()
        session.put(self.glance.url + '/v2/images/%s/file' % image['id'],
                    data=b'\0' * 4096,
                    headers={'Content-Type': 'application/octet-stream'})
        return image['id']

    def _cyborg_configs(self):
        common = {
            'DEFAULT': {'transport_url': self.transport_url},
            'keystone_authtoken': self.keystone.authtoken_options('cyborg'),
            'placement': self.keystone.auth_options('cyborg'),
            'nova': self.keystone.auth_options('cyborg'),
            'fake_driver': {'device_count': self.devices,
                            'accelerators_per_device': self.handles,
                            'attach_type': 'MDEV'},
        }
        self.api_port = processes.free_port()
        files = {
            'conductor': {'DEFAULT': {'host': 'ctl-1',
                                      'state_path': self.workdir},
                          'database': {'connection':
                                       self.databases['cyborg']},
                          # NOTE(nova): offered to Nova at once, as an
                          # operator's activation would.
                          'conductor': {'heartbeat_interval': 2,
                                        'auto_activate_new_devices': True}},
            'api': {'DEFAULT': {'host': 'api-1',
                                'state_path': self.workdir},
                    'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                            'auth_strategy': 'keystone'}},
        }
        for host in self.hosts:
            # NOTE(nova): each agent keeps its cache in a directory of its
            # own, as it would on its own host.
            state = os.path.join(self.workdir, 'agent-%s' % host)
            os.makedirs(state, exist_ok=True)
            files['agent-%s' % host] = {
                'DEFAULT': {'host': host, 'state_path': state},
                'agent': {'enabled_drivers': 'fake_driver',
                          'report_interval': 2}}
        paths = {}
        for name, own in files.items():
            merged = processes.layered(common, self.sections, own)
            paths[name] = processes.write_config(
                os.path.join(self.workdir, 'cyborg-%s.conf' % name), merged)
        return paths

    def _start_cyborg(self):
        self.cyborg_confs = self._cyborg_configs()
        synced = processes.run('cyborg-dbsync', '--config-file',
                               self.cyborg_confs['conductor'], 'upgrade')
        assert synced.returncode == 0, synced.stderr
        self.conductor = processes.Process(
            'cyborg-conductor', self.cyborg_confs['conductor'], self.workdir)
        self.procs.append(self.conductor)
        self.cyborg_api = processes.Process(
            'cyborg-api', self.cyborg_confs['api'], self.workdir)
        self.procs.append(self.cyborg_api)
        self.cyborg_url = 'http://127.0.0.1:%d' % self.api_port
        processes.wait_for(
            lambda: 'started on host' in self.conductor.log(), TIMEOUT,
            what='cyborg-conductor to listen')
        processes.wait_for(self._cyborg_answers, TIMEOUT,
                           what='cyborg-api to answer')
        self.keystone.register_accelerator(self.cyborg_url)

    def _cyborg_answers(self):
        try:
            return requests.get(self.cyborg_url + '/', timeout=5).ok
        except requests.RequestException:
            return False

    def start_agent(self, host):
        proc = processes.Process(
            'cyborg-agent-%s' % host, None, self.workdir,
            command=[processes.script('cyborg-agent'), '--config-file',
                     self.cyborg_confs['agent-%s' % host]])
        self.procs.append(proc)
        self.agents[host] = proc
        return proc

    def prepare_delay(self, seconds):
        """Every agent's fake driver takes ``seconds`` to prepare a handle
        meanwhile (a context manager)."""
        return self.fake_driver(prepare_delay=seconds)

    @contextlib.contextmanager
    def fake_driver(self, hosts=None, **options):
        """The fake driver of the agents of ``hosts`` (every host: None)
        takes ``options`` of ``[fake_driver]`` meanwhile: the agents
        restart with them, and with the defaults after."""
        hosts = list(hosts or self.agents)
        self._restart_agents(hosts, options)
        try:
            yield
        finally:
            self._restart_agents(hosts, dict.fromkeys(options))

    def _restart_agents(self, hosts, fake_driver):
        """Restart the agents of ``hosts`` with ``fake_driver`` set in
        their configuration (an option set to None: removed)."""
        for host in hosts:
            proc = self.agents[host]
            proc.stop(timeout=60)
            path = self.cyborg_confs['agent-%s' % host]
            config = configparser.ConfigParser(interpolation=None)
            config.read(path)
            for option, value in fake_driver.items():
                if value is None:
                    config.remove_option('fake_driver', option)
                else:
                    config.set('fake_driver', option, str(value))
            with open(path, 'w') as handle:
                config.write(handle)
            proc.start()
        for host in hosts:
            proc = self.agents[host]
            processes.wait_for(
                lambda proc=proc: 'started on host' in
                proc.log()[proc.offset:],
                TIMEOUT, what='cyborg-agent on %s to start' % host)

    def wait_inventory(self):
        """Until each host's devices are in Placement below its node."""
        wanted = len(self.hosts) * self.devices

        def reported():
            found = self.placement_get(
                '/resource_providers?resources=%s:1' % RESOURCE_CLASS)
            return len(found['resource_providers']) >= wanted

        processes.wait_for(reported, TIMEOUT, interval=0.5,
                           what='the agents\' devices in Placement')

    def flavor_with(self, profile, name=None):
        """A flavor asking for ``profile`` (none when None)."""
        name = name or 'accel-%s' % profile
        flavor = self.nova_call('POST', '/flavors', keystone_mod.ADMIN,
                                json={'flavor': {'name': name, 'ram': 64,
                                                 'vcpus': 1, 'disk': 1}})
        flavor = flavor['flavor']
        if profile:
            self.nova_call('POST', '/flavors/%s/os-extra_specs'
                           % flavor['id'], keystone_mod.ADMIN,
                           json={'extra_specs': {
                               'accel:device_profile': profile}})
        return flavor['id']

    # --- Calling the services ---------------------------------------------

    def nova_call(self, method, path, user='p1-member', ok=(200, 201, 202,
                                                             204), **kwargs):
        """Nova's compute API as ``user``; the JSON body, or None."""
        resp = self.keystone.session(user).request(
            self.nova.api.url + '/v2.1' + path, method, raise_exc=False,
            headers={'OpenStack-API-Version': 'compute %s'
                     % COMPUTE_VERSION}, **kwargs)
        assert resp.status_code in ok, '%s %s: %d %s' % (
            method, path, resp.status_code, resp.text[:2000])
        return resp.json() if resp.content else None

    def cyborg(self, method, path, user=keystone_mod.ADMIN, ok=(200, 201,
                                                               202, 204),
               **kwargs):
        resp = self.keystone.session(user).request(
            self.cyborg_url + path, method, raise_exc=False,
            headers={'OpenStack-API-Version': 'accelerator 2.0'}, **kwargs)
        assert resp.status_code in ok, '%s %s: %d %s' % (
            method, path, resp.status_code, resp.text[:2000])
        return resp.json() if resp.content else None

    def placement_get(self, path):
        resp = self.keystone.session(keystone_mod.ADMIN).get(
            self.placement.url + path, raise_exc=False,
            headers={'OpenStack-API-Version': 'placement 1.39'})
        assert resp.status_code == 200, resp.text[:2000]
        return resp.json()

    # --- Servers ----------------------------------------------------------

    def boot(self, name='vm', flavor=None, user='p1-member', wait='ACTIVE',
             **extra):
        """Create a server with no network; wait for ``wait`` (None: do
        not wait). Returns the server as Nova shows it."""
        body = dict({'name': name, 'imageRef': self.image,
                     'flavorRef': flavor or self.flavor,
                     'networks': 'none'}, **extra)
        server = self.nova_call('POST', '/servers', user,
                                json={'server': body})['server']
        if wait:
            # NOTE(nova): as admin, who sees the host it landed on.
            return self.wait_status(server['id'], wait)
        return server

    def server(self, server_id, user=keystone_mod.ADMIN):
        return self.nova_call('GET', '/servers/%s' % server_id,
                              user)['server']

    def wait_status(self, server_id, status, user=keystone_mod.ADMIN,
                    timeout=TIMEOUT):
        """Until the server is ``status`` with no task; ERROR fails unless
        wanted."""
        def reached():
            found = self.server(server_id, user)
            if found['status'] == 'ERROR' and status != 'ERROR':
                raise AssertionError('server %s went ERROR: %s' % (
                    server_id, found.get('fault')))
            if found['status'] == status and \
                    not found.get('OS-EXT-STS:task_state'):
                return found
            return None

        return processes.wait_for(reached, timeout, interval=0.5,
                                  what='server %s to be %s' % (server_id,
                                                               status))

    def exists(self, server_id):
        """Whether Nova still has the server (as admin sees it)."""
        resp = self.keystone.session(keystone_mod.ADMIN).get(
            self.nova.api.url + '/v2.1/servers/%s' % server_id,
            raise_exc=False)
        assert resp.status_code in (200, 404), resp.text[:2000]
        return resp.status_code == 200

    def delete(self, server_id, user='p1-member'):
        self.nova_call('DELETE', '/servers/%s' % server_id, user)

        processes.wait_for(lambda: not self.exists(server_id), TIMEOUT,
                           interval=0.5,
                           what='server %s to be deleted' % server_id)

    def action(self, server_id, body, user='p1-member', status='ACTIVE'):
        """POST a server action; wait for ``status`` (None: do not)."""
        self.nova_call('POST', '/servers/%s/action' % server_id, user,
                       json=body)
        if status:
            return self.wait_status(server_id, status)
        return None

    # --- What Cyborg and Placement hold -------------------------------------

    def arqs_of(self, instance):
        return self.cyborg('GET', '/v2/accelerator_requests?instance=%s'
                           % instance)['arqs']

    def allocations_of(self, consumer):
        """{provider uuid: resources} of a consumer in Placement."""
        return {rp: found['resources'] for rp, found in self.placement_get(
            '/allocations/%s' % consumer)['allocations'].items()}

    def wait_allocations_only_on(self, consumer, host):
        """Until every allocation of ``consumer`` is in ``host``'s tree."""
        node = self.placement_get('/resource_providers?name=%s' % host)[
            'resource_providers'][0]['uuid']
        tree = {p['uuid'] for p in self.placement_get(
            '/resource_providers?in_tree=%s' % node)['resource_providers']}

        def only_there():
            held = self.allocations_of(consumer)
            return held and set(held) <= tree

        processes.wait_for(only_there, TIMEOUT, interval=1,
                           what='%s\'s allocations only on %s' % (consumer,
                                                                   host))

    @contextlib.contextmanager
    def compute_down(self, host):
        """nova-compute of ``host`` stopped and forced down, as an operator
        does before evacuating; started and brought back afterwards."""
        proc = self.nova.computes[host]
        proc.stop(timeout=60)
        service = self._compute_service(host)
        self.nova_call('PUT', '/os-services/%s' % service['id'],
                       keystone_mod.ADMIN, json={'forced_down': True})
        try:
            yield
        finally:
            proc.start()
            # NOTE(nova): Nova refuses (400) to force a host up until its
            # restarted compute has cleaned up the evacuations from it.
            processes.wait_for(
                lambda: self._force_up(service['id']), TIMEOUT, interval=1,
                what='nova-compute on %s to be forced up' % host)
            self.nova.wait_computes([host])

    def _force_up(self, service_id):
        """Whether Nova took ``forced_down: false`` for the service."""
        resp = self.keystone.session(keystone_mod.ADMIN).put(
            self.nova.api.url + '/v2.1/os-services/%s' % service_id,
            json={'forced_down': False}, raise_exc=False,
            headers={'OpenStack-API-Version': 'compute %s'
                     % COMPUTE_VERSION})
        assert resp.status_code in (200, 400), resp.text[:2000]
        return resp.status_code == 200

    def _compute_service(self, host):
        found = self.nova_call('GET', '/os-services?binary=nova-compute&'
                               'host=%s' % host, keystone_mod.ADMIN)
        return found['services'][0]
