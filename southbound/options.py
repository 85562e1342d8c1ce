"""How patiently a driver calls a device: the deadline of every call and the retry policy
(transport-neutral: the devices file sets them, every transport honours them)."""

from __future__ import annotations

import random
from dataclasses import dataclass


class RetryPolicyError(ValueError):
    """Retry or deadline settings out of range."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on UNAVAILABLE only: ``max_attempts`` calls in all, sleeping
    initial_backoff_s * multiplier**n (capped, with jitter) between them."""

    max_attempts: int = 5
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 1.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise RetryPolicyError("max_attempts must be at least 1")
        if self.initial_backoff_s < 0 or self.max_backoff_s < 0 or self.multiplier < 1:
            raise RetryPolicyError("backoffs must be >= 0 and multiplier >= 1")

    def backoff_s(self, retry: int, rng: random.Random) -> float:
        """Sleep before retry number ``retry`` (0-based), jittered into [50%, 100%]."""
        base = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier**retry)
        return base * rng.uniform(0.5, 1.0)


@dataclass(frozen=True)
class CallOptions:
    """Per-client call settings."""

    deadline_s: float = 5.0
    retry: RetryPolicy = RetryPolicy()

    def __post_init__(self) -> None:
        if self.deadline_s <= 0:
            raise RetryPolicyError("deadline_s must be positive")
