"""Services have glibc give big freed blocks back to the system."""

import ctypes
import platform

import pytest

from cyborg import service


def test_operator_setting_is_left_alone(monkeypatch):
    monkeypatch.setenv('MALLOC_MMAP_THRESHOLD_', '65536')
    assert service.give_back_big_blocks() is False


@pytest.mark.skipif(platform.libc_ver()[0] != 'glibc', reason='glibc only')
def test_threshold_set_on_glibc(monkeypatch):
    monkeypatch.delenv('MALLOC_MMAP_THRESHOLD_', raising=False)
    assert service.give_back_big_blocks() is True
    assert hasattr(ctypes.CDLL(None), 'mallopt')
