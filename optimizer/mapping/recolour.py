"""Moving today's circuits to the target with few changes: exchanges, then Kempe chains.

Think of every circuit as an edge from the north copy of one block to the south copy of
another, coloured by the OCS it is on. An OCS holds, per block, at most as many out-edges
as the block has north ports there and as many in-edges as it has south ports; ports of
one block and side on one OCS are interchangeable. Today's circuits are a valid
colouring. The target differs from them by *surplus* circuits (pairs that shrink) and
*deficit* circuits (pairs that grow); the lower bound on changes is the total surplus.
Inside one failure domain (the caller splits the pairs over the domains first):

1. **Exchange plan** (pairs still unoriented). An LP chooses, per OCS, surplus circuits
   to drop and deficit circuits (either orientation) to add so that every OCS keeps every
   block within its ports on each side: such exchanges cost nothing beyond the lower
   bound. It is solved on batches of ``EXCHANGE_BATCH`` OCSes (interior point) and
   rounded greedily, largest values first, each addition checked on the real counts.
2. **Swap cycles**: per OCS, an assignment problem (tails of droppable circuits and free
   north ports x heads and free south ports) finds further exchanges.
3. The remaining pairs are **oriented** (min-cost flow agreeing with what is in place).
4. Each remaining deficit circuit is inserted where both ends have a free or droppable
   port (free ports first), else along the cheapest **Kempe chain** (Dijkstra over
   overflowing port groups: the blocking circuit moves to an OCS where its end has room,
   the one it collides with there moves on, ...), counting the circuits moved away from
   their OCS. If no chain exists the circuits in the way are taken out and re-inserted.
5. Surplus circuits left over are dropped (moved ones first), and a local search swaps
   OCSes alpha/beta on alternating components that bring more circuits home (Kempe
   interchanges).

Every step keeps every OCS within its ports, so the result is always valid. Everything is
polynomial: LPs, assignment problems, and shortest-path searches over
``OCSes x 2 x blocks`` port groups. :class:`RecolouringStuck` asks the caller to fall
back to the flow-based construction.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from optimizer.mapping.chains import ChainMixin
from optimizer.mapping.edges import NORTH, SOUTH, RecolouringStuck
from optimizer.mapping.exchange import ExchangeMixin
from optimizer.mapping.flips import FlipMixin
from optimizer.mapping.ports import OcsPorts

log = logging.getLogger(__name__)

MAX_FORCED_PLACEMENTS_PER_CIRCUIT = 4

__all__ = ["Recolouring", "RecolouringStuck", "recolour", "recolour_pairs"]


class Recolouring(ExchangeMixin, ChainMixin, FlipMixin):
    """All circuits of some OCSes as coloured edges, changed one circuit at a time."""

    orient_rest: Callable[[np.ndarray], np.ndarray] | None = None

    def run(self) -> list[np.ndarray]:
        self._drop_over_domain_limit()
        pending: list[tuple[int, int]] = []
        iu, ju = np.nonzero(self.target)
        for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
            pending.extend([(a, b)] * max(-self._surplus((a, b)), 0))
        planned = self._run_exchanges()
        if not self.directed:
            if self.orient_rest is None:
                raise RecolouringStuck("internal error: undirected recolouring without an orientation")
            self._switch_to_directed(self.orient_rest(self.directed_counts()))
            iu, ju = np.nonzero(self.target)
        self._run_exchanges(lp=False)
        pending = []
        for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
            pending.extend([(a, b)] * max(-self._surplus((a, b)), 0))
        order = self.rng.permutation(len(pending))
        pending = [pending[i] for i in order]
        hard = deque(self._insert_cheapest_first(pending))
        chains = len(hard)
        forced = 0
        while hard:
            a, b = hard.popleft()
            if self._insert(a, b, allow_chain=True):
                continue
            forced += 1
            if forced > MAX_FORCED_PLACEMENTS_PER_CIRCUIT * (len(pending) + 1):
                raise RecolouringStuck(f"no OCS or chain has room for a circuit between blocks #{a} and #{b}")
            hard.extend(self._force(a, b))
        self._drop_leftover_surplus()
        flips = self._improve_by_flips()
        log.debug("recolouring: %d planned exchanges, then %d insertions, %d needed a chain, %d forced, "
                  "%d improving flips", planned, len(pending), chains, forced, flips)
        return self._counts()

    def _drop_over_domain_limit(self) -> None:
        for d in range(self.limit.shape[0]):
            over = np.argwhere(self.in_domain[d] > self.limit[d])
            for a, b in over.tolist():
                extra = int(self.in_domain[d, a, b] - self.limit[d, a, b])
                here = [eid for eid in self.by_pair[(a, b)] if self.dom[self._edge(eid).ocs] == d]
                for eid in here[:extra]:
                    self._drop(eid)

    def _drop_leftover_surplus(self) -> None:
        for pair, eids in self.by_pair.items():
            extra = self._surplus(pair)
            if extra <= 0:
                continue
            ordered = sorted(eids, key=lambda i: 0 if self._edge(i).ocs != self._edge(i).home else 1)
            for eid in ordered[:extra]:
                self._drop(eid)

    def _counts(self) -> list[np.ndarray]:
        out = [np.zeros((self.n, self.n), dtype=np.int64) for _ in range(self.n_ocs)]
        for e in self.edges:
            if e is not None:
                out[e.ocs][e.tail, e.head] += 1
        for o in range(self.n_ocs):
            over_north = (out[o].sum(axis=1) > self.cap[o, NORTH]).any()
            if over_north or (out[o].sum(axis=0) > self.cap[o, SOUTH]).any():
                raise RecolouringStuck("internal error: recolouring overfilled an OCS")
        return out


def recolour_pairs(
    ocs_list: Sequence[OcsPorts],
    pairs: np.ndarray,
    orient_rest: Callable[[np.ndarray], np.ndarray],
    seed: int = 0,
    exchange_plan: bool = True,
) -> list[np.ndarray]:
    """Like :func:`recolour` but from pair counts: the exchange plan may orient the new
    circuits either way; ``orient_rest(directed counts so far)`` then orients the rest.
    ``exchange_plan=False`` skips the LP (faster, more changes)."""
    limit = np.full((1, *pairs.shape), np.iinfo(np.int64).max // 4, dtype=np.int64)
    job = Recolouring(ocs_list, pairs, limit, [0] * len(ocs_list), np.random.default_rng(seed))
    job.directed = False
    job.by_pair = {}
    for eid, e in enumerate(job.edges):
        if e is not None:
            job.by_pair.setdefault(job._key(e.tail, e.head), set()).add(eid)
    job.surplus_groups[...] = 0
    job._arc_contribution = {}
    for key in list(job.by_pair):
        job._refresh_arc(key)
    job.orient_rest = orient_rest
    job.use_exchange_plan = exchange_plan
    return job.run()


def recolour(
    ocs_list: Sequence[OcsPorts],
    target: np.ndarray,
    domain_limit: np.ndarray | None = None,
    domain_index: Sequence[int] | None = None,
    seed: int = 0,
    exchange_plan: bool = True,
) -> list[np.ndarray]:
    """Per OCS of ``ocs_list``, the directed counts (north block, south block) realising
    the symmetric ``target`` with few changes. Without ``domain_limit`` (per domain
    position, n x n) and ``domain_index`` (OCS position -> domain position) all the OCSes
    form one domain with no pair limit. Raises RecolouringStuck when it cannot."""
    if domain_limit is None or domain_index is None:
        domain_limit = target[None, :, :].copy()
        domain_index = [0] * len(ocs_list)
    job = Recolouring(ocs_list, target, domain_limit, domain_index, np.random.default_rng(seed))
    job.use_exchange_plan = exchange_plan
    return job.run()
