"""Removing accelerator requests their creator gave up on (orphans).

An API call answered 503 whose conductor created the ARQs later, or a boot
that failed between creating its ARQs and binding them, leaves ARQs
Initial with no instance. Deadlines (cyborg.deadline) stop the first from
being written in the usual cases; what is left anyway is removed here by
every conductor's periodic task, each orphan once (cyborg.db.orphans).
"""

from oslo_config import cfg
from oslo_log import log as logging

from cyborg.conductor.bind import store as arq_store
from cyborg.db import orphans as orphans_db
from cyborg.notifications import arq as arq_notifications

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: Most seconds between two removals by one conductor.
INTERVAL = 300
#: Most orphans one transaction removes.
BATCH = 100
#: Most transactions one run makes; the next run takes what is left.
BATCHES = 10
#: The age the status check reports orphans at while removal is off.
REPORT_AGE = 3600


def interval() -> float:
    """Seconds between two removals: INTERVAL, or the orphan age where it
    is shorter, so that an orphan waits at most about twice its age."""
    age = CONF.conductor.orphan_arq_age
    return min(INTERVAL, age) if age else INTERVAL


def remove(context):
    """Remove the orphans older than ``[conductor] orphan_arq_age``, with
    the accelerator.arq.delete notification of each (nothing else: an
    Initial ARQ holds no handle and nothing in Placement); returns their
    uuids."""
    age = CONF.conductor.orphan_arq_age
    if not age:
        return []
    removed = []
    for _batch in range(BATCHES):
        gone = orphans_db.remove(context, age, BATCH)
        if gone:
            LOG.info('Removed %(count)d accelerator requests left Initial '
                     'with no instance for more than %(age)d seconds '
                     '([conductor] orphan_arq_age): %(uuids)s',
                     {'count': len(gone), 'age': age,
                      'uuids': ', '.join(v['uuid'] for v in gone)})
            arq_notifications.deleted(
                context, [arq_store.to_object(context, v) for v in gone])
            removed.extend(v['uuid'] for v in gone)
        if len(gone) < BATCH:
            break
    return removed


def summary(context):
    """(how many orphans, the oldest one's age in seconds or None, the
    age they are judged at)."""
    age = CONF.conductor.orphan_arq_age or REPORT_AGE
    count, oldest = orphans_db.summary(context, age)
    return count, oldest, age
