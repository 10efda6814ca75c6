"""Serves nova-api's, glance-api's or Placement's WSGI application.

Run with the Python of the Nova virtualenv (tools/tempest-venvs.sh), by
path, not as a module of this package: only the standard library, the
service and cheroot are imported. It prints ``<service> listening on URL``
once it serves, and exits 0 on SIGTERM or SIGINT. Each service finds its
configuration through the variables its own WSGI entry point reads, as
under uWSGI or mod_wsgi.
"""

import argparse
import os
import signal
import sys
import threading

#: service: the module of its WSGI entry point
APPS = {
    'nova-api': 'nova.wsgi.osapi_compute',
    'glance-api': 'glance.wsgi.api',
    'placement-api': 'placement.wsgi.api',
}


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
    # NOTE(nova): run by path, this file's directory comes first on
    # sys.path, where this package's modules (wsgi.py, services.py) would
    # shadow top-level modules of the same names.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path
                   if os.path.abspath(p or os.curdir) != here]
    _environ(args.service, os.path.abspath(args.config_dir))

    import importlib

    from cheroot import wsgi
    application = importlib.import_module(APPS[args.service]).application

    server = wsgi.Server((args.host, args.port), application,
                         numthreads=args.threads)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    server.prepare()
    serving = threading.Thread(target=server.serve, daemon=True)
    serving.start()
    print('%s listening on http://%s:%d' % (args.service, args.host,
                                            args.port), flush=True)
    # NOTE(nova): the main thread only waits, so that the signal handlers
    # run; serve() stops when stop() is called from here.
    while not stopping.wait(0.5):
        if not serving.is_alive():
            return 1
    server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
