"""Debian packages the cluster tools need, installed when missing."""

import os
import subprocess

#: package -> a file it installs.
FILES = {
    'haproxy': '/usr/sbin/haproxy',
}


def ensure(package):
    """The path FILES names for ``package``, after ``apt-get install``
    when it is missing (the tests run as root on a Debian machine)."""
    path = FILES[package]
    if os.path.exists(path):
        return path
    result = subprocess.run(
        ['apt-get', 'install', '-y', '-q', package], capture_output=True,
        text=True, timeout=600, stdin=subprocess.DEVNULL,
        env=dict(os.environ, DEBIAN_FRONTEND='noninteractive'))
    if not os.path.exists(path):
        raise RuntimeError('%s is not installed and apt-get install failed: '
                           '%s' % (package, (result.stderr or
                                             result.stdout)[-2000:]))
    return path

