"""Fixtures the functional tests share: a real Keystone."""

import time

import pytest

from cyborg.tests import keystone as keystone_process


@pytest.fixture(scope='session')
def keystone(tmp_path_factory):
    """One Keystone for the session, with cyborg.tests.keystone's users.

    Its ``timings`` say how long its virtualenv build and its start took.
    """
    began = time.monotonic()
    venvs = keystone_process.build_venvs('keystone')
    built = time.monotonic()
    with keystone_process.Keystone(
            venvs['keystone'], tmp_path_factory.mktemp('keystone')) as found:
        found.timings = {'venv': built - began,
                         'start': time.monotonic() - built}
        yield found
