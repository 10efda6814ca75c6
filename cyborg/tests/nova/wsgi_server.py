"""Serves nova-api's, glance-api's or Placement's WSGI application.

Run with the Python of the Nova virtualenv (tools/tempest-venvs.sh), by
path, not as a module of this package: only the standard library, the
service, cheroot and ``cyborg/tests/cheroot_runner.py`` are imported. It
prints ``<service> listening on URL`` once it serves, and exits 0 on
SIGTERM or SIGINT. Each service finds its configuration through the
variables its own WSGI entry point reads, as under uWSGI or mod_wsgi.
"""

import argparse
import importlib.util
import os
import sys

#: service: the module of its WSGI entry point
APPS = {
    'nova-api': 'nova.wsgi.osapi_compute',
    'glance-api': 'glance.wsgi.api',
    'placement-api': 'placement.wsgi.api',
}


def _runner():
    """cyborg/tests/cheroot_runner.py, loaded by path (so is this file)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        os.pardir, 'cheroot_runner.py')
    spec = importlib.util.spec_from_file_location('cheroot_runner', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _environ(service, config_dir):
    if service == 'nova-api':
        # NOTE(nova): its files are api-paste.ini then nova.conf; the
        # first is the one paste reads the pipeline from.
        os.environ['OS_NOVA_CONFIG_DIR'] = config_dir
    elif service == 'glance-api':
        os.environ['OS_GLANCE_CONFIG_DIR'] = config_dir
    else:
        os.environ['OS_PLACEMENT_CONFIG_DIR'] = config_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('service', choices=sorted(APPS))
    parser.add_argument('--config-dir', required=True)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--threads', type=int, default=16)
    args = parser.parse_args()

    # NOTE(nova): both services parse sys.argv with oslo.config when
    # their application is built, and would refuse this runner's flags.
    sys.argv = sys.argv[:1]
    runner = _runner()
    runner.hide_own_directory(__file__)
    _environ(args.service, os.path.abspath(args.config_dir))

    application = importlib.import_module(APPS[args.service]).application
    return runner.serve(application, args.host, args.port, args.threads,
                        args.service)


if __name__ == '__main__':
    sys.exit(main())
