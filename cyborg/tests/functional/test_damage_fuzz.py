"""A longer, random run of the sysfs damage fuzz (its seed is printed)."""

import random
import time

import pytest

from cyborg.tests import damage_fuzz

pytestmark = pytest.mark.functional

ROUNDS = 600


def test_damaged_trees_lose_only_what_is_damaged(override, tmp_path):
    seed = random.SystemRandom().getrandbits(32)
    # NOTE(fuzz): replay a failure with damage_fuzz.run(..., seed, ...).
    print('damage fuzz seed %d' % seed)
    start = time.monotonic()
    done = damage_fuzz.run(override, tmp_path, seed, ROUNDS)
    print('damage fuzz: %d rounds, %d damages in %.1f s' % (
        ROUNDS, done, time.monotonic() - start))
    assert done >= ROUNDS
