"""Errors raised by the pure core."""

from __future__ import annotations


class HeliostatError(Exception):
    """Base class of every error Heliostat raises on purpose."""


class ConfigError(HeliostatError):
    """A configuration or input file is invalid.

    The message names the file, the key path inside it (``blocks[3].uplinks``) and
    the problem, so that an operator can fix it without reading code.
    """

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {problem}")


class InfeasibleError(HeliostatError):
    """An optimisation problem has no solution for the given inputs."""


class SolverError(HeliostatError):
    """A solver failed or stopped without a usable solution."""


class SolverTimeLimit(SolverError):
    """A solver ran out of its time budget before it proved an optimum."""
