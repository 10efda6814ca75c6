"""Serves a WSGI application with cheroot until SIGTERM or SIGINT.

The runner of the test servers of other projects (Keystone, Nova, Glance,
Placement), which run with their own virtualenv's Python, by path: it
imports only the standard library and cheroot.
"""

import os
import signal
import sys
import threading


def hide_own_directory(script):
    """Take the directory of ``script`` off ``sys.path``: run by path, it
    comes first there, and its modules would shadow top-level modules of
    the same names (cyborg/tests/keystone.py, nova/wsgi.py)."""
    here = os.path.dirname(os.path.abspath(script))
    sys.path[:] = [p for p in sys.path
                   if os.path.abspath(p or os.curdir) != here]


def serve(application, host, port, threads, name):
    """Serve until SIGTERM or SIGINT; 0 then, 1 if serving ended first.
    Prints ``<name> listening on URL`` once it serves."""
    from cheroot import wsgi

    server = wsgi.Server((host, port), application, numthreads=threads)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    server.prepare()
    serving = threading.Thread(target=server.serve, daemon=True)
    serving.start()
    print('%s listening on http://%s:%d' % (name, host, port), flush=True)
    # NOTE(tests): the main thread only waits, so that the signal handlers
    # run; serve() stops when stop() is called from here.
    while not stopping.wait(0.5):
        if not serving.is_alive():
            return 1
    server.stop()
    return 0
