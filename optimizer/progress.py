"""Progress of a long plan, as log records a terminal can show.

The pure core does no I/O; a plan that takes a minute still has to show that it is alive. Its
steps (the pipeline step, the LP's rounds, the mapping's domains, the stages) are logged at
INFO on the ``heliostat.progress`` logger, which propagates nowhere by default: ``heliostat
toe`` shows them on one updating line on stderr when stderr is a terminal (``-q`` silences it),
and anything else may attach its own handler.
"""

from __future__ import annotations

import logging

PROGRESS_LOGGER = "heliostat.progress"

log = logging.getLogger(PROGRESS_LOGGER)
log.propagate = False  # not mixed into the ordinary log; a handler attached here shows it
log.addHandler(logging.NullHandler())


def report(step: str, detail: str = "") -> None:
    """One progress line: ``step`` (e.g. "ToE LP", "mapping") and what is happening in it."""
    if log.isEnabledFor(logging.INFO):
        log.info("%s%s", step, f": {detail}" if detail else "")
