"""A base for objects that hold connections: ``with obj:`` closes them on the way out."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class ClosesOnExit:
    """``__enter__`` returns the object; ``__exit__`` calls its ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
