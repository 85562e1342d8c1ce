"""When a new topology is worth applying: enough predicted gain, and not too soon.

Pure: the caller passes the time (seconds on any monotonic clock) of now and of the last
applied change. Reconfiguring drains links and moves fibre paths, so a topology is only
applied when it beats today's by more than ``min_gain`` (relative, in MLU or in throughput
scale, whichever is larger) and at least ``min_interval_s`` has passed since the last
change, unless today's MLU is above 1 (the fabric drops traffic, e.g. its topology is still
specialised for traffic that has gone): then the interval is waived. The gain threshold
is the hysteresis band: two topologies that each look a little better than the other in
turn never flip back and forth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer.errors import ConfigError


@dataclass(frozen=True)
class ReconfigurePolicy:
    min_gain: float = 0.05  # relative improvement required, e.g. 0.05 = 5%
    min_interval_s: float = 3600.0  # seconds between applied changes

    def validate(self) -> None:
        if not 0.0 <= self.min_gain < math.inf:
            raise ConfigError("<policy>", "min_gain", f"must be a finite number >= 0, got {self.min_gain}")
        if not 0.0 <= self.min_interval_s < math.inf:
            raise ConfigError(
                "<policy>", "min_interval_s", f"must be a finite number >= 0, got {self.min_interval_s}"
            )


@dataclass(frozen=True)
class Decision:
    apply: bool
    reason: str
    gain: float  # the larger of the relative MLU and throughput gains (may be negative)


def relative_gains(
    current_mlu: float, proposed_mlu: float, current_scale: float | None, proposed_scale: float | None
) -> tuple[float, float | None]:
    """(MLU gain, throughput gain or None when the scales are not given), relative to today."""
    if current_mlu == math.inf:
        # today's topology cannot carry the demand at all: any topology that can is a full gain
        mlu_gain = 1.0 if math.isfinite(proposed_mlu) else 0.0
    elif current_mlu > 0:
        mlu_gain = (current_mlu - proposed_mlu) / current_mlu
    else:
        mlu_gain = 0.0
    scale_gain = None
    if current_scale is not None and proposed_scale is not None and current_scale > 0:
        scale_gain = (proposed_scale - current_scale) / current_scale
    return mlu_gain, scale_gain


def should_reconfigure(
    current_mlu: float,
    proposed_mlu: float,
    now: float,
    last_change_at: float | None,
    policy: ReconfigurePolicy | None = None,
    current_scale: float | None = None,
    proposed_scale: float | None = None,
    circuits_changed: int | None = None,
) -> Decision:
    """Decide whether to apply the proposed topology; the reason says why in words."""
    policy = policy or ReconfigurePolicy()
    policy.validate()
    mlu_gain, scale_gain = relative_gains(current_mlu, proposed_mlu, current_scale, proposed_scale)
    gain = mlu_gain if scale_gain is None else max(mlu_gain, scale_gain)
    if circuits_changed == 0:
        return Decision(False, "the proposed topology changes no circuits", gain)
    # An overloaded fabric (MLU above 1: traffic is dropped, typically because the topology is
    # still specialised for traffic that has gone) does not wait out the interval.
    overloaded = current_mlu > 1.0 and gain > policy.min_gain
    if last_change_at is not None and not overloaded:
        since = now - last_change_at
        if since < policy.min_interval_s:
            return Decision(
                False,
                f"last change was {since:.0f} s ago; the minimum interval is {policy.min_interval_s:.0f} s",
                gain,
            )
    figure = "MLU" if scale_gain is None or mlu_gain >= scale_gain else "throughput"
    if gain <= policy.min_gain:
        return Decision(
            False,
            f"predicted gain {gain:.1%} ({figure}) is not over the {policy.min_gain:.1%} threshold "
            f"(MLU {current_mlu:.4f} -> {proposed_mlu:.4f})",
            gain,
        )
    waived = ""
    if overloaded and last_change_at is not None and now - last_change_at < policy.min_interval_s:
        waived = "; the fabric is overloaded, so the minimum interval is waived"
    return Decision(
        True,
        f"predicted {figure} gain {gain:.1%} is over the {policy.min_gain:.1%} threshold "
        f"(MLU {current_mlu:.4f} -> {proposed_mlu:.4f}){waived}",
        gain,
    )
