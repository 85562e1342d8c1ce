"""Remembers answered requests so a replay (same request id and generation) is answered
again without being applied twice."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")


class ReplayCache(Generic[T]):
    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, int], T] = OrderedDict()

    def get(self, request_id: str, generation: int) -> T | None:
        if not request_id:
            return None
        key = (request_id, generation)
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        return None

    def put(self, request_id: str, generation: int, result: T) -> None:
        if not request_id:
            return
        self._entries[(request_id, generation)] = result
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
