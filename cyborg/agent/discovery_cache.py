"""Reuses the last discovery pass while nothing it depends on has changed."""

# NOTE(discovery_cache): a pass is answered from the cache when its key is
# the one the last full pass was run under. The key is
# - the enabled drivers: their entry points, the objects themselves and
#   their discover functions, so enabling, disabling, updating (a new
#   object) or patching one misses;
# - the partition modes the operator chose (agent/modes.py);
# - the value of every registered option, so a reload or an override
#   misses (nvidia_gpu reads enabled_vgpu_types on each pass, intel_qat
#   its extra ids when built);
# - a fingerprint.Fingerprint of the tree (its NOTE says why kernfs allows
#   no mtimes): the entries of every PCI function's directory and of the
#   directories drivers look up, each function's driver link, the content
#   of the files drivers watch (values the kernel changes in place) and,
#   on a tree that is not sysfs, the link targets, mtimes and sizes of
#   each function's own entries.
# Health checks still run on every pass, on copies of the cached devices.
# A pass in which a driver failed is not kept, the agent clears the cache
# after every driver operation (program, install, attach...) and a result
# older than [agent] discovery_cache_max_age is read again, which bounds
# what a value no driver watches can hide.

import dataclasses
import time

from oslo_config import cfg

from cyborg.agent import fingerprint
from cyborg.drivers import base

CONF = cfg.CONF

def option_values(conf=None):
    """Every registered option's value, as text; None when unreadable."""
    conf = conf or CONF
    values = []
    try:
        for name in sorted(conf):
            item = conf[name]
            if isinstance(item, cfg.ConfigOpts.GroupAttr):
                values.extend((name, opt, _text(item, opt))
                              for opt in sorted(item))
            else:
                values.append((name, repr(item)))
    except (cfg.Error, RuntimeError):
        # NOTE(discovery_cache): options registered meanwhile, or not
        # parsed yet: this pass is not cached.
        return None
    return tuple(values)


def _text(group, opt):
    try:
        return repr(group[opt])
    except Exception as exc:  # noqa: BLE001 - a bad value is a value too
        return type(exc).__name__


def watched_files(drivers):
    """The patterns every enabled driver watches."""
    found = set()
    for driver in drivers.values():
        found.update(getattr(driver, 'watched_files',
                             base.AcceleratorDriver.watched_files))
    return found


@dataclasses.dataclass
class Key:
    """What a discovery pass depended on."""

    drivers: tuple
    options: tuple
    tree: fingerprint.Fingerprint
    #: The partition modes chosen: ``((driver, address, mode), ...)``.
    modes: tuple = ()

    @classmethod
    def of(cls, drivers, root=None, modes=None):
        """The key of a pass now; None when this pass cannot be cached.

        :param modes: the chosen partition modes, ``{driver: {address:
            mode}}``.
        """
        options = option_values()
        if options is None:
            return None
        tree = fingerprint.Fingerprint(root or CONF.agent.sysfs_root,
                                       watched_files(drivers))
        if tree.racy:
            return None
        chosen = tuple(sorted((driver, address, mode)
                              for driver, by in (modes or {}).items()
                              for address, mode in by.items()))
        return cls(_identities(drivers), options, tree, chosen)

    def same(self, other):
        return (other is not None and self.options == other.options
                and self.modes == other.modes
                and self.tree == other.tree
                and len(self.drivers) == len(other.drivers)
                and all(a[0] == b[0] and a[1] is b[1] and a[2] is b[2]
                        for a, b in zip(self.drivers, other.drivers,
                                        strict=True)))


def _identities(drivers):
    # NOTE(discovery_cache): the objects are held, not their ids, which a
    # new driver could reuse once the old one is freed.
    found = []
    for name, driver in drivers.items():
        discover = getattr(driver, 'discover', None)
        found.append((name, driver, getattr(discover, '__func__', discover)))
    return tuple(found)


class DiscoveryCache:
    """The devices of the last full pass, by driver, and its key."""

    def __init__(self):
        self._key = None
        self._found = None
        self._stored = 0.0

    def enabled(self):
        return CONF.agent.discovery_cache_max_age > 0

    def lookup(self, key):
        """``[(driver, devices)]`` stored under ``key``, or None."""
        if key is None or self._found is None:
            return None
        age = time.monotonic() - self._stored
        if age > CONF.agent.discovery_cache_max_age or \
                not key.same(self._key):
            return None
        return self._found

    def store(self, key, found):
        """Keep ``found`` (``[(driver, devices)]``) of a pass run under
        ``key``; a None key keeps nothing."""
        if key is None:
            self.invalidate()
            return
        self._key = key
        self._found = found
        self._stored = time.monotonic()

    def invalidate(self):
        """The next pass runs every driver again."""
        self._key = None
        self._found = None
