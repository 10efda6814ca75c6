"""This conductor's clock beside the database server's: measured and told."""

import datetime
import statistics
import time

from oslo_config import cfg
from oslo_log import log as logging

from cyborg import deadline
from cyborg.db import api as dbapi
from cyborg.db import clock

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def _local_time():
    # NOTE(skew): a function of its own, so that tests can move this
    # process's clock.
    return time.time()


def measure(context):
    """Seconds this process's clock is ahead of the database server's
    (negative: behind), to the millisecond: its time halfway through one
    SELECT of the database's, less the database's."""
    before = _local_time()
    database = clock.database_time(context)
    after = _local_time()
    database = database.replace(tzinfo=datetime.timezone.utc).timestamp()
    return round((before + after) / 2 - database, 3)


def own_offset(context, host, measured, binary='cyborg-conductor'):
    """How far this conductor's clock is off, as far as it can tell: its
    ``measured`` skew when that is beyond ``[conductor]
    clock_skew_threshold`` while the other live conductors' recorded skews
    are within it (the database and its peers agree, so this clock is the
    wrong one); else 0, as when every conductor finds the same skew (the
    database server's clock is the wrong one) or no peer is alive."""
    threshold = CONF.conductor.clock_skew_threshold
    if abs(measured) <= threshold:
        return 0.0
    now, rows = dbapi.services.read(context, binary=binary)
    down = datetime.timedelta(seconds=CONF.conductor.service_down_time)
    peers = [row.clock_skew for row in rows
             if row.host != host and row.clock_skew is not None and
             row.last_seen_up is not None and now - row.last_seen_up <= down]
    if not peers:
        return 0.0
    return measured if abs(statistics.median(peers)) <= threshold else 0.0


def judge_deadlines(context, host, measured):
    """Judge calls' deadlines by this clock less ``own_offset``; say so
    when that starts or stops."""
    found = own_offset(context, host, measured)
    if bool(found) != bool(deadline.offset()):
        if found:
            LOG.warning('Conductor %(host)s judges the deadlines of calls '
                        'by its clock less %(offset).1f seconds: the '
                        'database server and the other conductors agree '
                        'it is that far off.', {'host': host,
                                                'offset': found})
        else:
            LOG.info('Conductor %s judges the deadlines of calls by its own '
                     'clock again.', host)
    deadline.set_offset(found)
    return found


class Watch:
    """Says, once each way, when the skew passes the threshold
    (``[conductor] clock_skew_threshold``) and when it is back within."""

    def __init__(self, host):
        self.host = host
        self.beyond = False

    def check(self, skew):
        """Log ``skew`` if it crossed the threshold; returns whether it is
        beyond it."""
        threshold = CONF.conductor.clock_skew_threshold
        beyond = abs(skew) > threshold
        if beyond and not self.beyond:
            LOG.warning(
                'The clock of conductor %(host)s is %(skew).1f seconds '
                '%(way)s the database server\'s, beyond [conductor] '
                'clock_skew_threshold (%(threshold)s s). Liveness and '
                'takeover go by the database\'s clock, but this host\'s '
                'logs, call deadlines and timestamps are off: fix its time '
                'synchronisation (NTP).',
                {'host': self.host, 'skew': abs(skew),
                 'way': 'ahead of' if skew > 0 else 'behind',
                 'threshold': threshold})
        elif self.beyond and not beyond:
            LOG.info('The clock of conductor %(host)s is back within '
                     '%(threshold)s seconds of the database server\'s '
                     '(%(skew)+.1f s).',
                     {'host': self.host, 'skew': skew,
                      'threshold': threshold})
        self.beyond = beyond
        return beyond
