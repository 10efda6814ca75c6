"""Serves Keystone's WSGI application with cheroot, for the functional tests.

Run with the Python of the Keystone virtualenv (tools/tempest-venvs.sh), by
path, not as a module of this package: only the standard library, Keystone
and cheroot are imported. It prints ``Keystone listening on URL`` once it
serves, and exits 0 on SIGTERM or SIGINT.
"""

import argparse
import os
import signal
import sys
import threading


def _one_at_a_time(application):
    """``application``, serving one request at a time.

    NOTE(keystone): on SQLite, two transactions that both read and then
    write make one fail at once with "database is locked" (waiting would
    deadlock), which Keystone answers with a 500; tempest creating its
    users from several workers does just that.
    """
    lock = threading.Lock()

    def serve(environ, start_response):
        with lock:
            result = application(environ, start_response)
            try:
                return list(result)
            finally:
                if hasattr(result, 'close'):
                    result.close()

    return serve


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--threads', type=int, default=16)
    args = parser.parse_args()

    # NOTE(keystone): Keystone parses sys.argv with oslo.config when its
    # application is built, and would refuse this runner's own flags; it
    # gets no argument, and its configuration file through the variable
    # its WSGI entry point reads.
    sys.argv = sys.argv[:1]
    # NOTE(keystone): run by path, this file's directory comes first on
    # sys.path, where cyborg/tests/keystone.py would shadow Keystone.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path
                   if os.path.abspath(p or os.curdir) != here]
    os.environ.pop('OS_KEYSTONE_CONFIG_DIR', None)
    os.environ['OS_KEYSTONE_CONFIG_FILES'] = os.path.abspath(args.config_file)

    from cheroot import wsgi
    from keystone.wsgi import api

    server = wsgi.Server((args.host, args.port),
                         _one_at_a_time(api.application),
                         numthreads=args.threads)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    server.prepare()
    serving = threading.Thread(target=server.serve, daemon=True)
    serving.start()
    print('Keystone listening on http://%s:%d' % (args.host, args.port),
          flush=True)
    # NOTE(keystone): the main thread only waits, so that the signal
    # handlers run; serve() stops when stop() is called from here.
    while not stopping.wait(0.5):
        if not serving.is_alive():
            return 1
    server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
