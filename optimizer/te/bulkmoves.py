"""Bulk moves of weight units off links above a target, within each group.

:func:`move_to_slack` repeatedly takes the link furthest above the target and moves as
many units as fit, of one group, from a path through it onto another candidate path of
the same group (any of its paths, members or not) whose links stay within the target.

When no unit fits anywhere (a coarse group's unit is larger than the room left on any of
its other paths, while that room is held by fine groups), it makes room first: for the few
destinations that miss the least, it moves fine units off the destination's links onto
paths with slack that avoid the links involved, and makes the coarse move if that freed
enough (else nothing of the attempt is kept). Every kept move lowers the hottest link
without lifting any other link over the target, so the total excess over the target falls
at each step and the peak never rises. Group totals are kept, so tables and the switch
budget still hold.
"""

from __future__ import annotations

import numpy as np

from optimizer.te.paths import NO_LINK, CandidatePaths, LinkGraph, entries_by_link, path_loads

_MAX_STEPS = 4_000  # bulk moves before the stage stops (each costs well under 1 ms at 64 blocks)
_MAKE_ROOM_TRIES = 6  # destinations tried when no unit fits as things are
_MAKE_ROOM_MOVES = 24  # fine moves to free one destination link
_TOLERANCE = 1e-9


class _Mover:
    """Weights and link loads, with every (group, path) entry indexed by the links it uses."""

    def __init__(
        self,
        graph: LinkGraph,
        paths: CandidatePaths,
        demand_gbps: np.ndarray,
        weights: np.ndarray,
        target_mlu: float,
        frozen: np.ndarray,
    ) -> None:
        self.paths = paths
        self.caps = graph.capacity_gbps
        self.weights = weights.copy()
        self.movable = paths.valid & ~frozen[:, None] & (demand_gbps > 0)[:, None]
        self.entries = entries_by_link(paths, graph.n_links, self.movable)
        self.rows, self.vias = self.entries.rows, self.entries.vias
        self.unit = demand_gbps / np.maximum(weights.sum(axis=1), 1)
        self.limit = np.append(self.caps * target_mlu, np.inf)  # NO_LINK: never the binding hop
        self.load = np.append(link_utilisation(graph, paths, demand_gbps, weights) * self.caps, 0.0)

    def candidates(self, link: int, avoid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Entries (group, path) on ``link`` with units, each group's paths avoiding every
        link in ``avoid``, and each such path's room (Gbit/s) within the target."""
        entries = self.entries.on(link)
        entries = entries[self.weights[self.rows[entries], self.vias[entries]] > 0]
        k = self.rows[entries]
        first, second = self.paths.first[k], self.paths.second[k]
        ok = self.movable[k] & ~np.isin(first, avoid) & ~np.isin(second, avoid)
        room = np.minimum(self.limit[first] - self.load[first], self.limit[second] - self.load[second])
        return entries, ok, np.where(ok, room, -np.inf)

    def best_move(self, link: int, wanted: float, avoid: np.ndarray) -> tuple[int, int, int, int] | None:
        """The move off ``link`` of the most traffic (up to ``wanted``) that fits within the
        target on paths avoiding ``avoid``: (group, from path, to path, units)."""
        entries, _, room = self.candidates(link, avoid)
        if not len(entries):
            return None
        k = self.rows[entries]
        step = self.unit[k]
        count = np.minimum(np.floor(np.maximum(room, 0.0) / step[:, None] * (1 + _TOLERANCE)),
                           self.weights[k, self.vias[entries]][:, None])
        count = np.minimum(count, np.ceil(wanted / step - _TOLERANCE)[:, None])
        gain = count * step[:, None]
        if gain.max() <= 0:
            return None
        best, dest = divmod(int(np.argmax(gain)), gain.shape[1])
        return int(k[best]), int(self.vias[entries[best]]), dest, int(count[best, dest])

    def apply(self, move: tuple[int, int, int, int]) -> None:
        row, source, dest, units = move
        self.weights[row, source] -= units
        self.weights[row, dest] += units
        for via, sign in ((source, -1.0), (dest, 1.0)):
            for hop in (self.paths.first[row, via], self.paths.second[row, via]):
                if hop != NO_LINK:
                    self.load[hop] += sign * units * self.unit[row]

    def make_room(self, link: int) -> bool:
        """Move one unit off ``link`` onto a path that lacks room for it, after moving fine
        units off that path's links; False (and nothing changed) if it cannot."""
        entries, ok, room = self.candidates(link, np.array([link]))
        if not len(entries):
            return False
        k = self.rows[entries]
        deficit = np.where(ok, self.unit[k][:, None] - room, np.inf)
        deficit[np.arange(len(k)), self.vias[entries]] = np.inf
        order = np.argsort(deficit, axis=None, kind="stable")[:_MAKE_ROOM_TRIES]
        for flat in order.tolist():
            best, dest = divmod(flat, deficit.shape[1])
            if not np.isfinite(deficit[best, dest]):
                break
            row, source = int(k[best]), int(self.vias[entries[best]])
            saved = (self.weights.copy(), self.load.copy())
            ends = (self.paths.first[row, dest], self.paths.second[row, dest])
            hops = [int(hop) for hop in ends if hop != NO_LINK]
            avoid = np.array([link, *hops])
            needed = [self.load[hop] + self.unit[row] - self.limit[hop] for hop in hops]
            if all(self._free(hop, amount, avoid, row) for hop, amount in zip(hops, needed, strict=True)):
                self.apply((row, source, dest, 1))
                return True
            self.weights, self.load = saved
        return False

    def _free(self, link: int, amount: float, avoid: np.ndarray, keep_row: int) -> bool:
        """Move at least ``amount`` Gbit/s of other groups off ``link``, within the target."""
        for _ in range(_MAKE_ROOM_MOVES):
            if amount <= _TOLERANCE * self.caps[link]:
                return True
            move = self.best_move(link, amount, avoid)
            if move is None or move[0] == keep_row:
                return False
            self.apply(move)
            amount -= move[3] * self.unit[move[0]]
        return bool(amount <= _TOLERANCE * self.caps[link])


def move_to_slack(
    graph: LinkGraph,
    paths: CandidatePaths,
    demand_gbps: np.ndarray,
    weights: np.ndarray,
    target_mlu: float,
    frozen: np.ndarray,
) -> np.ndarray:
    """Bulk moves off the link furthest above ``target_mlu`` (see the module), until no link
    is above the target or none can be relieved."""
    mover = _Mover(graph, paths, demand_gbps, weights, target_mlu, frozen)
    caps = mover.caps
    for _ in range(_MAX_STEPS):
        over = (mover.load[:-1] - mover.limit[:-1]) / caps
        link = int(np.argmax(over))
        if over[link] <= _TOLERANCE:
            break
        move = mover.best_move(link, mover.load[link] - mover.limit[link], np.array([link]))
        if move is not None:
            mover.apply(move)
        elif not mover.make_room(link):
            break
    return mover.weights


def link_utilisation(
    graph: LinkGraph, paths: CandidatePaths, demand_gbps: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Each link's load over its capacity when every group splits by ``weights``."""
    totals = np.maximum(weights.sum(axis=1), 1)
    flow = demand_gbps[:, None] * weights / totals[:, None]
    util: np.ndarray = path_loads(graph, paths, flow) / graph.capacity_gbps
    return util


def peak_utilisation(
    graph: LinkGraph, paths: CandidatePaths, demand_gbps: np.ndarray, weights: np.ndarray
) -> float:
    """The highest link utilisation under ``weights`` (0 on a fabric without links)."""
    util = link_utilisation(graph, paths, demand_gbps, weights)
    return float(util.max()) if len(util) else 0.0
