"""Channel set-up and the call wrapper every gRPC client uses: deadline, retries, error mapping
(through :func:`southbound.grpc_native.status.map_rpc_error`)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc

from southbound.errors import ErrorCode, SouthboundError
from southbound.grpc_native.status import map_rpc_error
from southbound.options import CallOptions, RetryPolicy, RetryPolicyError
from southbound.tls import TlsConfig

__all__ = ["CallOptions", "RetryPolicy", "RetryPolicyError", "RpcCaller", "open_channel"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Reconnect quickly after a device comes back (grpc's default backoff starts at 1 s).
_CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),  # retries are ours, bounded and logged
]


def open_channel(
    address: str, tls: TlsConfig | None, extra_options: Sequence[tuple[str, Any]] = ()
) -> grpc.Channel:
    """An insecure channel, or a TLS one when ``tls`` is given; ``extra_options`` are added
    to the channel arguments (e.g. a larger ``grpc.max_receive_message_length``)."""
    base = _CHANNEL_OPTIONS + list(extra_options)
    if tls is None:
        return grpc.insecure_channel(address, options=base)
    options = base + tls.channel_options()
    return grpc.secure_channel(address, tls.channel_credentials(), options=options)


class RpcCaller:
    """Calls unary methods of one device with a deadline, retrying UNAVAILABLE with backoff."""

    def __init__(
        self,
        device: str,
        options: CallOptions,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.device = device
        self.options = options
        self._sleep = sleep
        self._rng = rng or random.Random()

    def call(
        self, method: Callable[..., T], request: Any, deadline_s: float | None = None
    ) -> T:
        """Call ``method(request)``; raise a SouthboundError when it finally fails."""
        timeout = deadline_s if deadline_s is not None else self.options.deadline_s
        policy = self.options.retry
        for attempt in range(policy.max_attempts):
            try:
                return method(request, timeout=timeout)
            except grpc.RpcError as exc:
                error = map_rpc_error(exc, self.device)
                last = attempt + 1 == policy.max_attempts
                if error.code is not ErrorCode.UNAVAILABLE or last:
                    if attempt:
                        log.warning("%s: giving up after %d attempts", self.device, attempt + 1)
                    raise error from exc
                pause = policy.backoff_s(attempt, self._rng)
                log.info(
                    "%s unavailable (attempt %d/%d), retrying in %.3fs",
                    self.device, attempt + 1, policy.max_attempts, pause,
                )
                self._sleep(pause)
        raise SouthboundError(self.device, "no attempt made")  # unreachable: max_attempts >= 1
