"""How long each executor step may take (the controller config's ``timeouts:`` section).

Apart from :mod:`controller.config` so that the executor, which a config builds, does not
import the config back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepTimeouts:
    drain: float = 30.0
    verify_drain: float = 90.0
    apply_ocs: float = 60.0
    qualify: float = 60.0
    undrain: float = 30.0
    toe_solve: float = 60.0  # not an executor step: the ToE LP's time budget (ToeKnobs.time_limit)

    @property
    def stage_seconds(self) -> float:
        """The longest a stage may take: every executor step at its timeout (a step that overruns
        its timeout fails and the stage rolls back; qualify waits for its timeout on purpose)."""
        return float(sum(getattr(self, k) for k in STEP_KEYS))

    def for_step(self, name: str) -> float:
        """The timeout of an executor step by its journal name (``drain``, ``apply_ocs``...)."""
        if name not in STEP_KEYS:
            raise KeyError(f"no timeout for step {name!r}")
        return float(getattr(self, name))


TIMEOUT_KEYS = tuple(StepTimeouts.__dataclass_fields__)
#: The executor's steps that have a timeout (every key but the ToE solve's budget).
STEP_KEYS = tuple(k for k in TIMEOUT_KEYS if k != "toe_solve")
