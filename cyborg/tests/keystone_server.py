"""Serves Keystone's WSGI application with cheroot, for the functional tests.

Run with the Python of the Keystone virtualenv (tools/tempest-venvs.sh), by
path, not as a module of this package: only the standard library, Keystone,
cheroot and ``cheroot_runner.py`` beside it are imported. It prints
``Keystone listening on URL`` once it serves, and exits 0 on SIGTERM or
SIGINT.
"""

import argparse
import os
import sys
import threading

# NOTE(keystone): a module beside this file, which run by path it finds
# (before it takes its own directory off sys.path).
import cheroot_runner


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
    cheroot_runner.hide_own_directory(__file__)
    os.environ.pop('OS_KEYSTONE_CONFIG_DIR', None)
    os.environ['OS_KEYSTONE_CONFIG_FILES'] = os.path.abspath(args.config_file)

    from keystone.wsgi import api
    return cheroot_runner.serve(_one_at_a_time(api.application), args.host,
                                args.port, args.threads, 'Keystone')


if __name__ == '__main__':
    sys.exit(main())
