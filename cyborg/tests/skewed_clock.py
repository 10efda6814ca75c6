"""Moves this process's clock as Cyborg reads it, not the database's."""

import datetime
import sys
import time
import types

_REAL_DATETIME = datetime.datetime


class _AnyDatetime(type(_REAL_DATETIME)):
    # NOTE(tests): values made before the move (and by other libraries)
    # are real datetimes; they must still pass isinstance checks.
    def __instancecheck__(cls, value):
        return isinstance(value, _REAL_DATETIME)


def skewed_datetime(skew):
    """A ``datetime.datetime`` whose now, utcnow and today are ``skew``
    seconds off, and of which real datetimes are instances."""
    delta = datetime.timedelta(seconds=skew)

    class SkewedDatetime(_REAL_DATETIME, metaclass=_AnyDatetime):
        @classmethod
        def now(cls, tz=None):
            return _REAL_DATETIME.now(tz) + delta

        @classmethod
        def utcnow(cls):
            return _REAL_DATETIME.now(datetime.timezone.utc).replace(
                tzinfo=None) + delta

        @classmethod
        def today(cls):
            return cls.now()

    return SkewedDatetime


def _modules(skew):
    """A stand-in for the ``datetime`` and ``time`` modules, ``skew``
    seconds off."""
    SkewedDatetime = skewed_datetime(skew)

    class Module(types.ModuleType):
        def __init__(self, real, **overrides):
            super().__init__(real.__name__)
            self.__dict__.update(overrides)
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

    return (Module(datetime, datetime=SkewedDatetime),
            Module(time, time=lambda: time.time() + skew))


def skew(monkeypatch, seconds):
    """Put this process's clock ``seconds`` ahead (negative: behind) for
    every module of Cyborg that reads it through ``datetime`` or ``time``;
    the database server's clock (SQLite's, here) stays where it is."""
    fake_datetime, fake_time = _modules(seconds)
    for name, module in list(sys.modules.items()):
        if not name.startswith('cyborg.') or name.startswith('cyborg.tests'):
            continue
        if _is(getattr(module, 'datetime', None), datetime):
            monkeypatch.setattr(module, 'datetime', fake_datetime)
        if _is(getattr(module, 'time', None), time):
            monkeypatch.setattr(module, 'time', fake_time)


def _is(found, real):
    """Whether ``found`` is the module ``real`` or a stand-in for it (a
    test may move the clock twice)."""
    return found is real or getattr(found, '_real', None) is real
