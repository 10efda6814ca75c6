"""A threaded TCP proxy the functional tests cut to simulate an outage."""

import contextlib
import socket
import threading

_CHUNK = 65536


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``target`` (host, port).

    ``cut()`` closes every open connection and closes new ones as soon as
    they are accepted, as a server that went away would look to a client
    whose packets still reach the host; ``restore()`` forwards again.
    """

    def __init__(self, target):
        self.target = target
        self._lock = threading.Lock()
        self._open = set()
        self._cut = False
        self._listener = socket.create_server(('127.0.0.1', 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True,
                                        name='tcp-proxy-%d' % self.port)
        self._thread.start()

    def url_for(self, url):
        """``url`` (a database or transport URL naming ``target``) with
        this proxy's address instead."""
        host, port = self.target
        old = '@%s:%d' % (host, port)
        if old not in url:
            raise ValueError('%s does not name %s:%d' % (url, host, port))
        return url.replace(old, '@127.0.0.1:%d' % self.port)

    @property
    def connections(self):
        """How many client connections are being forwarded."""
        with self._lock:
            return len(self._open) // 2

    def cut(self):
        with self._lock:
            self._cut = True
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)

    def restore(self):
        with self._lock:
            self._cut = False

    def close(self):
        self.cut()
        _close(self._listener)
        self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _accept(self):
        while True:
            try:
                client, _address = self._listener.accept()
            except OSError:
                return  # NOTE(tests): close() closed the listener.
            with self._lock:
                refused = self._cut
            if refused:
                _close(client)
                continue
            threading.Thread(target=self._connect, args=(client,),
                             daemon=True).start()

    def _connect(self, client):
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            _close(client)
            return
        server.settimeout(None)
        with self._lock:
            if self._cut:
                refused = True
            else:
                refused = False
                self._open.update((client, server))
        if refused:
            _close(client)
            _close(server)
            return
        threading.Thread(target=self._pump, args=(server, client),
                         daemon=True).start()
        self._pump(client, server)

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(_CHUNK)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        # NOTE(tests): one side ended: end both, as a real peer would.
        with self._lock:
            self._open.discard(source)
            self._open.discard(sink)
        _close(source)
        _close(sink)


def _close(sock):
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
