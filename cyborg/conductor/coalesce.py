"""Group commit: many RPC callers' items applied in one batch at a time."""

import concurrent.futures
import queue
import threading
import time

from oslo_log import log as logging

from cyborg.conductor import outage

LOG = logging.getLogger(__name__)
_STOP = object()


class Coalescer:
    """Hands the items callers submit to ``apply`` in batches.

    One worker thread takes whatever is waiting (at most ``max_items``),
    waiting up to ``delay`` seconds after the first item for others to
    join, and runs ``apply(items)`` once for all of them. While a batch is
    applied, the next one gathers, so the busier the conductor the larger
    (and cheaper per item) its batches.

    ``apply`` returns one outcome per item, in order: a result, or an
    exception instance that only that item's caller gets.
    """

    def __init__(self, name, apply, max_items, delay=0.0):
        self.name = name
        self.apply = apply
        self.max_items = max_items
        self.delay = delay
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._worker = None
        self._stopped = False
        self.batches = 0
        self.items = 0

    def submit(self, item):
        """Apply ``item`` with others; returns its result or raises."""
        self._start()
        future = concurrent.futures.Future()
        self._queue.put((item, future))
        return future.result()

    def stop(self):
        """Let the worker finish what is queued, then end it."""
        with self._lock:
            self._stopped = True
            worker = self._worker
        if worker is not None:
            self._queue.put(_STOP)
            worker.join()

    def _start(self):
        # NOTE(coalesce): started on first use rather than at construction,
        # so that a manager built before the service forks (or in a test
        # that never reports) leaves no thread behind.
        if self._worker is not None and not self._stopped:
            return
        with self._lock:
            if self._stopped:
                raise RuntimeError('%s: stopped' % self.name)
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._run, name='coalesce-%s' % self.name,
                    daemon=True)
                self._worker.start()

    def _gather(self):
        """The next batch; empty once stopped and drained."""
        first = self._queue.get()
        if first is _STOP:
            return []
        batch = [first]
        deadline = time.monotonic() + self.delay
        while len(batch) < self.max_items:
            remaining = deadline - time.monotonic()
            try:
                if remaining > 0:
                    entry = self._queue.get(timeout=remaining)
                else:
                    entry = self._queue.get_nowait()
            except queue.Empty:
                break
            if entry is _STOP:
                # NOTE(coalesce): this batch is the last; the sentinel goes
                # back so that the loop ends after it.
                self._queue.put(_STOP)
                break
            batch.append(entry)
        return batch

    def _run(self):
        while True:
            batch = self._gather()
            if not batch:
                return
            items = [item for item, _future in batch]
            try:
                outcomes = self.apply(items)
            except Exception as exc:  # noqa: BLE001 - each caller re-raises
                # NOTE(coalesce): a database outage is logged once, by the
                # outage tracker, not once per batch.
                if not outage.is_connection_error(exc):
                    LOG.exception('Applying a batch of %d %s failed',
                                  len(items), self.name)
                outcomes = [exc] * len(items)
            self.batches += 1
            self.items += len(items)
            for (_item, future), outcome in zip(batch, outcomes,
                                                strict=True):
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
