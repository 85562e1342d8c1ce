"""A process pool for the mapping's failure domains: the ``parallel_map`` the planners give
:func:`optimizer.toe.reconfigure.plan_target`.

The pure core maps the failure domains of a big fabric side by side when it is given a
``map``-like (:data:`optimizer.mapping.ParallelMap`) and does no process management itself;
``heliostat toe``, the daemon's ToE step and the benchmarks make the pool here. Workers are
*spawned* (fresh interpreters; never a fork of the daemon, whose gRPC threads a plain fork would
copy mid-flight), so they are this process's children (their peak memory shows in
``resource.RUSAGE_CHILDREN`` once the pool is shut down), and are started, the mapping imported,
when the pool is made, so that the first plan does not wait for them.

What the workers log comes back to this process (a queue, re-dispatched to the logger it was
logged on here), so that a domain's messages, e.g. that the plan's time limit left no room for a
candidate, show in the daemon's and the CLI's log like the rest of the plan's.
"""

from __future__ import annotations

import logging
import logging.handlers
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

from optimizer.fabric import Fabric
from optimizer.mapping import PARALLEL_WORK, ParallelMap

log = logging.getLogger(__name__)


def default_workers() -> int:
    """The cores this process may run on (at most 4: a fabric has up to 4 failure domains in
    practice, and a domain is the unit of work)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def pays_off(fabric: Fabric) -> bool:
    """Whether the fabric is big enough for the mapping to use a pool (see
    :data:`optimizer.mapping.PARALLEL_WORK`): on small ones starting it costs more than it saves."""
    return len(fabric.ocs) * fabric.n_blocks >= PARALLEL_WORK and len(fabric.domains) > 1


@contextmanager
def domain_pool(workers: int | None = None, fabric: Fabric | None = None) -> Iterator[ParallelMap | None]:
    """A pool of ``workers`` processes (default :func:`default_workers`) for the duration of the
    block, as its ``map``; None (map one domain after the other) with fewer than 2 workers, or
    for a ``fabric`` too small to pay off (:func:`pays_off`)."""
    workers = default_workers() if workers is None else workers
    if workers < 2 or (fabric is not None and not pays_off(fabric)):
        yield None
        return
    context = multiprocessing.get_context("spawn")
    records = context.Queue()
    listener = logging.handlers.QueueListener(records, _Redispatch())
    listener.start()
    level = logging.getLogger("optimizer").getEffectiveLevel()
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_log_to,
                                 initargs=(records, level)) as pool:
            # start every worker now (each task submitted while none is idle starts one);
            # unpickling the task imports this module, and with it the mapping
            list(pool.map(_pid, range(workers)))
            log.debug("mapping pool: %d worker processes", workers)
            yield pool.map
    finally:
        listener.stop()
        records.close()


def _pid(_: int) -> int:
    """A worker's process id (the task that starts it)."""
    return os.getpid()


def _log_to(records: multiprocessing.Queue, level: int) -> None:
    """A worker's logging: every record at ``level`` (this process's level for the optimizer's
    loggers when the pool was made) or above goes to ``records``."""
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(records)]
    root.setLevel(level)


class _Redispatch(logging.Handler):
    """Hands a worker's record to the logger of the same name here, if that logger is enabled
    for its level (its handlers, and its parents', then format and write it)."""

    def emit(self, record: logging.LogRecord) -> None:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
