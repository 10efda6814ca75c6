"""Placement, Glance and nova-api served from the Nova virtualenv."""

import os
import shutil

import requests

from cyborg.tests import processes

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'wsgi_server.py')
TIMEOUT = 120

#: service: (configuration file, paste file the package ships, if any)
FILES = {
    'placement-api': ('placement.conf', None),
    'glance-api': ('glance-api.conf', 'etc/glance/glance-api-paste.ini'),
    'nova-api': ('nova.conf', 'etc/nova/api-paste.ini'),
}


class WsgiService(processes.Process):
    """One of FILES served on a free port by ``wsgi_server.py``.

    :param sections: its configuration file, ``{section: {option: value}}``.
    :param venv: the Nova virtualenv.
    """

    def __init__(self, service, venv, sections, log_dir, config_dir=None):
        self.service = service
        self.venv = venv
        self.dir = config_dir or os.path.join(str(log_dir), service)
        os.makedirs(self.dir, exist_ok=True)
        config, paste = FILES[service]
        self.config_file = processes.write_config(
            os.path.join(self.dir, config), sections)
        if paste:
            shutil.copy(os.path.join(venv, paste),
                        os.path.join(self.dir, os.path.basename(paste)))
        self.port = processes.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        super().__init__(service, None, log_dir, command=[
            os.path.join(venv, 'bin', 'python'), SERVER, service,
            '--config-dir', self.dir, '--port', str(self.port)])

    def wait_listening(self):
        def listening():
            if not self.alive():
                raise AssertionError('%s exited %s:\n%s' % (
                    self.name, self.proc.returncode, self.log()[-6000:]))
            if '%s listening on' % self.service not in self.log():
                return False
            try:
                return requests.get(self.url, timeout=5).status_code < 500
            except requests.RequestException:
                return False

        processes.wait_for(listening, TIMEOUT, interval=0.2,
                           what='%s to listen' % self.service)
        return self
