"""Nova's own services from PyPI: cells v2, nova-api, conductor, scheduler
and one nova-compute per host with Nova's fake virt driver."""

import contextlib
import glob
import os
import shutil
import subprocess

from cyborg.tests import install_guide
from cyborg.tests import keystone as keystone_mod
from cyborg.tests import processes
from cyborg.tests.nova import wsgi

TIMEOUT = 180
#: the test's virt driver, which nova-compute loads from ``nova.virt``.
VIRT_DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'virt', 'reschedule_once.py')


def nova_sections(keystone, workdir, transport_url, databases):
    """nova.conf as every Nova service reads it; ``databases`` holds the
    URLs of ``api``, ``cell0`` and ``cell1``. Its ``[cyborg]`` and
    ``[service_user]`` are the install guide's, with this deployment's
    Keystone, password and region."""
    service_user = keystone.auth_options('nova')
    guide = install_guide.nova_conf_for(
        keystone.url + '/v3', keystone_mod.PASSWORD, keystone_mod.REGION)
    sections = {
        'DEFAULT': {
            'transport_url': transport_url,
            # NOTE(nova): fake.FakeDriverWithoutFakeNodes, but for servers
            # named to fail their first spawn (see virt/reschedule_once).
            'compute_driver': 'reschedule_once.RescheduleOnceDriver',
            'state_path': os.path.join(workdir, 'state'),
            'my_ip': '127.0.0.1',
            'use_syslog': 'false',
        },
        'api': {'auth_strategy': 'keystone'},
        'wsgi': {'api_paste_config': os.path.join(workdir, 'nova-api',
                                                  'api-paste.ini')},
        'api_database': {'connection': databases['api']},
        'database': {'connection': databases['cell1']},
        'keystone_authtoken': keystone.authtoken_options('nova'),
        'placement': service_user,
        'neutron': service_user,
        'glance': {'region_name': service_user['region_name']},
        'scheduler': {'workers': 1},
        'conductor': {'workers': 1},
        'vnc': {'enabled': 'false'},
        'oslo_concurrency': {'lock_path': os.path.join(workdir, 'locks')},
    }
    assert set(guide) == {'cyborg', 'service_user'}, guide
    sections.update(guide)
    return sections


class Nova:
    """Nova's services on ``hosts``, one cell (cell1) and cell0.

    ``with Nova(venv, keystone, workdir, transport_url, databases, hosts)``
    syncs the databases, maps the cells, starts every service and maps the
    computes' hosts; nova-api is at ``api.url`` and in Keystone's catalog.
    """

    def __init__(self, venv, keystone, workdir, transport_url, databases,
                 hosts):
        self.venv = venv
        self.keystone = keystone
        self.dir = os.path.join(str(workdir), 'nova')
        os.makedirs(self.dir, exist_ok=True)
        self.databases = databases
        self.hosts = list(hosts)
        self.sections = nova_sections(keystone, self.dir, transport_url,
                                      databases)
        self.conf = None
        self.api = None
        self.procs = []
        self.computes = {}

    def bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def manage(self, *args):
        done = subprocess.run(
            [self.bin('nova-manage'), '--config-file', self.conf, *args],
            capture_output=True, text=True, timeout=TIMEOUT,
            stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise AssertionError('nova-manage %s exited %d:\n%s%s' % (
                ' '.join(args), done.returncode, done.stdout,
                done.stderr[-6000:]))
        return done

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _install_virt_driver(self):
        """Put the test's virt driver beside Nova's own: nova-compute
        loads ``[DEFAULT] compute_driver`` from the ``nova.virt`` package
        only. Nova's own files are left as they are."""
        (virt,) = glob.glob(os.path.join(self.venv, 'lib', 'python3*',
                                         'site-packages', 'nova', 'virt'))
        shutil.copyfile(VIRT_DRIVER, os.path.join(
            virt, os.path.basename(VIRT_DRIVER)))

    def _start(self):
        self._install_virt_driver()
        api_dir = os.path.join(self.dir, 'nova-api')
        os.makedirs(api_dir, exist_ok=True)
        self.conf = processes.write_config(
            os.path.join(api_dir, 'nova.conf'), self.sections)
        self.manage('api_db', 'sync')
        self.manage('cell_v2', 'map_cell0', '--database_connection',
                    self.databases['cell0'])
        self.manage('cell_v2', 'create_cell', '--name', 'cell1')
        self.manage('db', 'sync')
        self.api = wsgi.WsgiService('nova-api', self.venv, self.sections,
                                    self.dir, config_dir=api_dir)
        self.procs.append(self.api)
        self.api.wait_listening()
        self.keystone.register('compute', 'nova', self.api.url + '/v2.1')
        for name in ('nova-conductor', 'nova-scheduler'):
            self.procs.append(processes.Process(
                name, None, self.dir,
                command=[self.bin(name), '--config-file', self.conf]))
        for host in self.hosts:
            self.start_compute(host)
        self.wait_computes(self.hosts)
        self.manage('cell_v2', 'discover_hosts')

    def start_compute(self, host):
        """nova-compute for ``host``, its state (the node's uuid) apart."""
        state = os.path.join(self.dir, host)
        os.makedirs(state, exist_ok=True)
        # NOTE(nova): as on a compute host, no database options: its
        # every database access goes through nova-conductor.
        sections = {name: dict(options) for name, options in
                    self.sections.items()
                    if name not in ('database', 'api_database')}
        sections['DEFAULT'].update(host=host, state_path=state)
        own = processes.write_config(
            os.path.join(self.dir, '%s.conf' % host), sections)
        proc = processes.Process(
            'nova-compute-%s' % host, None, self.dir,
            command=[self.bin('nova-compute'), '--config-file', own])
        self.procs.append(proc)
        self.computes[host] = proc
        return proc

    def wait_computes(self, hosts):
        """Until Nova lists each of ``hosts``' compute services up."""
        def up():
            for proc in self.procs:
                if not proc.alive():
                    raise AssertionError('%s exited %s:\n%s' % (
                        proc.name, proc.proc.returncode, proc.log()[-6000:]))
            services = self.keystone.session('admin').get(
                self.api.url + '/v2.1/os-services?binary=nova-compute',
                raise_exc=False)
            if services.status_code != 200:
                return False
            found = {s['host'] for s in services.json()['services']
                     if s['state'] == 'up'}
            return set(hosts) <= found

        processes.wait_for(up, TIMEOUT, interval=0.5,
                           what='nova-compute on %s' % ', '.join(hosts))

    def __exit__(self, *exc_info):
        for proc in reversed(self.procs):
            # NOTE(nova): one that had to be killed says so in its log;
            # the others are still stopped.
            with contextlib.suppress(AssertionError):
                proc.stop(timeout=30)
