"""Timings of a bench's passes, summed up as the scripts print them."""

import math
import statistics


def percentiles(times, rank, digits):
    """``median X ms, pNN Y ms, min Z ms`` of ``times`` (milliseconds);
    pNN is the nearest-rank ``rank`` percentile (0.9 for p90)."""
    ordered = sorted(times)
    top = quantile(ordered, rank)
    form = '%%.%df' % digits
    return ('median %s ms, p%d %s ms, min %s ms' % (
        form, round(rank * 100), form, form)) % (
        statistics.median(ordered), top, ordered[0])


def quantile(values, rank):
    """The nearest-rank ``rank`` quantile of ``values`` (0.99 for p99)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(rank * len(ordered)) - 1)]
