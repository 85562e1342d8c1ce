"""Remembers answered requests so a replay (same request id and generation) is answered
again without being applied twice — and only a replay: the cache keeps a digest of each
request's content, and a request that reuses an id for a different body is refused
(issue 16: it used to be answered ``replayed: true`` with nothing applied). Request ids are
at most :data:`~emulation.admission.limits.MAX_REQUEST_ID_CHARS` characters, so the cache's 4,096
entries stay small."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Generic, TypeVar

from emulation.admission.limits import MAX_REQUEST_ID_CHARS
from emulation.errors import MalformedRequest

T = TypeVar("T")


def request_digest(content: object) -> str:
    """SHA-256 of a request's content in a canonical form (JSON, sorted keys); the caller
    passes the content normalised (sorted lists, ordered pairs)."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_request_id(request_id: str) -> None:
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        raise MalformedRequest(
            f"request_id: at most {MAX_REQUEST_ID_CHARS} characters, got {len(request_id)}"
        )


class ReplayCache(Generic[T]):
    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, int], tuple[str, T]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, request_id: str, generation: int, digest: str | None = None) -> T | None:
        """The answer to an earlier request with this id and generation, or None. With a
        ``digest``, a different earlier request under the same key is refused
        (MalformedRequest); without one, this only looks."""
        if not request_id:
            return None
        check_request_id(request_id)
        key = (request_id, generation)
        if key not in self._entries:
            return None
        seen, result = self._entries[key]
        if digest is not None and digest != seen:
            raise MalformedRequest(
                f"request_id {request_id[:64]!r} at generation {generation} was used for a different "
                "request; a replay must repeat the request exactly (use a new id for a new request)"
            )
        self._entries.move_to_end(key)
        return result

    def put(self, request_id: str, generation: int, result: T, digest: str) -> None:
        if not request_id:
            return
        check_request_id(request_id)
        self._entries[(request_id, generation)] = (digest, result)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
