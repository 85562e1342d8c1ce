"""Sample-average TE: one routing that does well on every recent matrix, each by its own yardstick.

The weights TE computes now carry the next interval's traffic, which is none of the matrices
measured so far. Planning for the last one (or for a per-pair peak) over-fits it; this
module plans for the recent ones together. With ``F[p, v]`` the share of pair ``p``'s
traffic on its path via node ``v``, ``U_k(F)`` the link utilisations matrix ``k`` gives and
``scale_k`` a lower bound of matrix ``k``'s own optimal MLU, it minimises

    mean_k  max_e U_k,e(F) / scale_k

over routings with ``0 <= F[p, v] <= cap[p, v]`` and ``sum_v F[p, v] = 1``: the average, over
the recent matrices, of how far the routing is from the best that matrix allowed. Normalising
by each matrix's own bound keeps one heavy snapshot from speaking for all; averaging (not
taking the worst) keeps one odd snapshot from dragging the routing towards it. ``cap`` is
the hedge (at most ``C_p / (B S)`` of a pair on one path).

``scale_k`` is the hose bound: no routing can do better than the busiest block's egress (or
ingress) over the capacity of its links, since every byte leaves its source and enters its
destination over one of them. On the Meta pod traces it equals the LP optimum in most
snapshots, and it costs no LP.

The problem is an LP, but with a few dozen matrices at 64 blocks it has millions of
non-zeros. It is solved instead by accelerated projected gradient (FISTA with backtracking and
adaptive restart) on a smoothed objective, the max over links replaced by the log-sum-exp
``smax_beta`` (within ``log(links) / beta`` of the max); the first solve on a topology goes
through a few increasing temperatures, later ones start from the routing in force and take a
few dozen steps. Every step is two sparse products (link loads and their gradient) and an
exact projection onto each pair's capped simplex. The best iterate on the true (unsmoothed)
objective is returned.

Pure: numpy and scipy, no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optimizer.te.paths import NO_LINK, CandidatePaths, LinkGraph

#: Temperatures of the first solve on a topology (on ratios to the bound: 200 is within
#: log(links) / 200, about 4%, of the max at 64 blocks; the true objective picks the iterate).
COLD_BETAS = (20.0, 50.0, 100.0, 200.0)
COLD_STEPS = 50  # per temperature
#: Matrices x pairs x vias up to which a first solve goes through every temperature; beyond
#: (64 blocks with a dozen matrices is 3 M) it takes 2 x WARM_STEPS at the last one, to stay
#: within a TE cycle, and later decisions improve on it.
FULL_COLD_SOLVE_ENTRIES = 1_000_000
#: Matrices x pairs x vias a decision reads at most (the newest matrices of the window): 12
#: matrices at 64 blocks (4,032 pairs x 66 vias), thousands at 8.
MAX_SCENARIO_ENTRIES = 3_200_000
#: The traffic shifted (a job started, a hotspot appeared) when, under the routing in force,
#: two matrices in a row have a ratio to their bound of at least SHIFT_RATIO and SHIFT_FACTOR
#: times the median of the older ones: the matrices before them then stop counting, until
#: they leave the window. One odd snapshot is not a shift: on the stationary Meta traces
#: (ratio p99 about 1.26) it does not fire.
SHIFT_RATIO = 1.4
SHIFT_FACTOR = 1.5
#: A step that holds: when the newest matrices agree with each other (each within HOLD_DISTANCE
#: of the newest, as a share of its volume: measurement noise, not a move) and the routing in
#: force gives the newest a ratio to its bound of at least HELD_RATIO, the traffic moved and
#: stayed, whatever the older ratios were: the matrices before the held ones stop counting. On
#: the Meta traces two snapshots in a row never come within 10% of each other, so it never fires.
HOLD_DISTANCE = 0.05
HELD_RATIO = 1.10
#: After a step that held, the matrices before it keep HEDGE_SHARE of the objective (traffic
#: that goes back and forth, on/off bursts, is still routed well both ways), unless that gives
#: the newest matrix a ratio to its bound above HELD_FIT: they are dropped then.
HEDGE_SHARE = 0.25
HELD_FIT = 1.05
#: The worst share of the scenarios (window and bursts, by weight) a ``tail`` term averages
#: (pod_a series 1, tail 0.1: p99 1.525 at 0.05, 1.576 at 0.1, 1.539 at 0.02, for a mean of
#: 1.154, 1.149, 1.155: benchmarks/replay/tail_sweep.py).
TAIL_MASS = 0.05
#: How surely (:func:`halves_agree`, a t-statistic) the window's first half must predict its
#: second half's jumps for the burst scenarios to raise each pair by its own jump, not the
#: burstiest pair's: the jumps persist. 96-matrix windows of pod_b (56 pairs, r about 0.73)
#: reach it 96-100% of the time; pod_a's (12 pairs: any pair may burst) 0-1.5%.
AGREE = 5.0
WARM_STEPS = 10  # per decision, from the routing in force: more does not route the next matrix better


@dataclass(frozen=True)
class ScenarioResult:
    fractions: np.ndarray  # (P, N): share of each pair on its path via node v
    objective: float  # mean over the matrices of max utilisation / bound
    iterations: int
    step: float = 1.0  # the gradient step the backtracking ended on (the next solve starts there)


class PathOperator:
    """Link loads of many matrices under one routing, and their gradient, as sparse products."""

    def __init__(self, graph: LinkGraph, paths: CandidatePaths) -> None:
        self.graph = graph
        self.paths = paths
        pairs, vias = paths.valid.shape
        cols = np.arange(pairs * vias).reshape(pairs, vias)
        first = paths.valid
        second = paths.valid & (paths.second != NO_LINK)
        rows = np.concatenate([paths.first[first], paths.second[second]])
        cols = np.concatenate([cols[first], cols[second]])
        import scipy.sparse as sp  # here: a plan without scenarios need not import it (~0.25 s)

        # A[link, pair * vias + via] = 1 when the path uses the link
        self.A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(graph.n_links, pairs * vias))
        self.AT = self.A.T.tocsr()
        self.inv_capacity = 1.0 / graph.capacity_gbps
        self._expanded: tuple[np.ndarray, np.ndarray] | None = None

    def utilisation(self, fractions: np.ndarray, demands: np.ndarray) -> np.ndarray:
        """(K, links): utilisation of each link under matrix k; ``demands`` is (K, P) Gbit/s."""
        flows = fractions.reshape(-1, 1) * self._per_path(demands)  # (P * N, K), contiguous
        utilisation: np.ndarray = (self.A @ flows).T * self.inv_capacity
        return utilisation

    def gradient(self, link_weights: np.ndarray, demands: np.ndarray) -> np.ndarray:
        """d/dF of sum_k <link_weights_k, U_k(F)>; ``link_weights`` is (K, links)."""
        weighted = np.ascontiguousarray((link_weights * self.inv_capacity).T)  # (links, K)
        per_path = self.AT @ weighted  # (P * N, K)
        gradient: np.ndarray = (
            np.einsum("ik,ik->i", per_path, self._per_path(demands)).reshape(self.paths.valid.shape)
        )
        return gradient

    def _per_path(self, demands: np.ndarray) -> np.ndarray:
        """(P * N, K): each pair's demand repeated for its vias, kept for the matrices at hand."""
        if self._expanded is None or self._expanded[0] is not demands:
            vias = self.paths.valid.shape[1]
            self._expanded = (demands, np.repeat(np.ascontiguousarray(demands.T), vias, axis=0))
        return self._expanded[1]


def hose_bounds(graph: LinkGraph, demands: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(K,) lower bounds of each matrix's min MLU: the busiest block's egress or ingress over
    the capacity of its links (every byte leaves and enters over one of them), and all the
    demand over all the capacity (every byte crosses at least one link)."""
    n = graph.n_blocks
    out_cap = np.bincount(graph.link_src, weights=graph.capacity_gbps, minlength=graph.n_nodes)[:n]
    in_cap = np.bincount(graph.link_dst, weights=graph.capacity_gbps, minlength=graph.n_nodes)[:n]
    egress = np.zeros((len(demands), n))
    ingress = np.zeros((len(demands), n))
    for k, row in enumerate(demands):
        egress[k] = np.bincount(src, weights=row, minlength=n)
        ingress[k] = np.bincount(dst, weights=row, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        out_ratio = np.where(out_cap > 0, egress / np.where(out_cap > 0, out_cap, 1), 0.0)
        in_ratio = np.where(in_cap > 0, ingress / np.where(in_cap > 0, in_cap, 1), 0.0)
    total = demands.sum(axis=1) / max(float(graph.capacity_gbps.sum()), 1e-12)
    ratio: np.ndarray = np.maximum(np.maximum(out_ratio.max(axis=1), in_ratio.max(axis=1)), total)
    return ratio


def project_capped_simplex(y: np.ndarray, cap: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each row of ``y`` projected (Euclidean) onto {0 <= x <= cap, sum x = 1} over its valid
    entries. Exact: the breakpoints of g(tau) = sum clip(y - tau, 0, cap) are sorted, and tau
    found on the piece where g crosses 1. Rows whose caps sum below 1 get x = cap."""
    rows, width = y.shape
    big = 1e12
    yv = np.where(valid, y, -big)
    c = np.where(valid, cap, 0.0)
    points = np.concatenate([yv, yv - c], axis=1)
    slopes = np.concatenate([np.where(valid, 1.0, 0.0), np.where(valid, -1.0, 0.0)], axis=1)
    order = np.argsort(-points, axis=1, kind="stable")
    pts = np.take_along_axis(points, order, axis=1)
    slope = np.cumsum(np.take_along_axis(slopes, order, axis=1), axis=1)
    gaps = pts[:, :-1] - pts[:, 1:]
    g = np.concatenate([np.zeros((rows, 1)), np.cumsum(slope[:, :-1] * gaps, axis=1)], axis=1)
    crossed = g >= 1.0 - 1e-15
    first = np.where(crossed.any(axis=1), np.argmax(crossed, axis=1), width * 2 - 1)
    j = np.maximum(first - 1, 0)
    r = np.arange(rows)
    s = np.maximum(slope[r, j], 1e-12)
    tau = pts[r, j] - (1.0 - g[r, j]) / s
    x = np.clip(yv - tau[:, None], 0.0, c)
    return np.where(valid, x, 0.0)


def path_caps(paths: CandidatePaths, hedge: float | None) -> np.ndarray:
    """Per-path share caps ``C_p / (B S)`` (1 without a hedge), never below what lets a pair's
    paths carry all of it."""
    if hedge is None:
        return np.where(paths.valid, 1.0, 0.0)
    total = paths.capacity_sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        caps = np.where(total[:, None] > 0, paths.bottleneck_gbps / (total[:, None] * hedge), 0.0)
    return np.minimum(caps, 1.0)


def capacity_split(paths: CandidatePaths) -> np.ndarray:
    """Each pair split over its paths in proportion to their capacity (the oblivious routing)."""
    total = paths.capacity_sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            total[:, None] > 0, paths.bottleneck_gbps / np.where(total > 0, total, 1)[:, None], 0.0
        )


def mean_ratio(
    operator: PathOperator,
    fractions: np.ndarray,
    demands: np.ndarray,
    scale: np.ndarray,
    shares: np.ndarray | None = None,
    tail: float = 0.0,
) -> float:
    """The objective: mean over the matrices (weighted by ``shares``, summing to 1, when given)
    of max utilisation over the matrix's bound, with ``tail`` of it on their CVaR
    (:func:`tail_risk`)."""
    ratios = operator.utilisation(fractions, demands).max(axis=1) / scale
    if shares is None:
        shares = np.full(len(ratios), 1.0 / len(ratios))
    return tail_risk(ratios, shares, tail)[0]


def cvar(
    ratios: np.ndarray, shares: np.ndarray, mass: float = TAIL_MASS, mu: float = 0.0
) -> tuple[float, np.ndarray]:
    """CVaR of ``ratios`` (K,) under the distribution ``shares`` (K,, summing to 1): the mean
    of the worst ``mass`` of it, and its gradient in the ratios (weights summing to 1, on the
    worst ones). With ``mu > 0`` the smooth version: ``min_t t + E[softplus_mu(r - t)] / mass``,
    within ``mu log 2 / mass`` of it, whose gradient moves continuously with the ratios."""
    if mu <= 0.0:
        order = np.argsort(-ratios, kind="stable")
        before = np.concatenate([[0.0], np.cumsum(shares[order])[:-1]])
        taken = np.clip(mass - before, 0.0, shares[order])
        weights = np.zeros_like(ratios)
        weights[order] = taken / mass
        return float(weights @ ratios), weights
    # the best t solves sum_k shares_k sigmoid((r_k - t) / mu) = mass (decreasing in t):
    # Newton from the exact quantile, kept inside a bracket by bisection
    lo, hi = float(ratios.min()) - 40.0 * mu, float(ratios.max()) + 40.0 * mu
    order = np.argsort(-ratios, kind="stable")
    at = min(int(np.searchsorted(np.cumsum(shares[order]), mass)), len(ratios) - 1)
    t = float(ratios[order[at]])
    for _ in range(50):
        s = _sigmoid((ratios - t) / mu)
        excess = float(shares @ s) - mass
        if abs(excess) < 1e-13:
            break
        lo, hi = (t, hi) if excess > 0 else (lo, t)
        slope = float(shares @ (s * (1.0 - s))) / mu
        t = t + excess / slope if slope > 0 else 0.5 * (lo + hi)
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
    value = t + float(shares @ (mu * np.logaddexp(0.0, (ratios - t) / mu))) / mass
    weights = shares * _sigmoid((ratios - t) / mu) / mass
    return value, weights


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return out


def tail_risk(
    ratios: np.ndarray, shares: np.ndarray, tail: float, mu: float = 0.0
) -> tuple[float, np.ndarray]:
    """``(1 - tail) * mean + tail * CVaR`` of the ratios under ``shares``, and its gradient."""
    mean = float(ratios @ shares)
    if tail <= 0.0:
        return mean, shares
    value, weights = cvar(ratios, shares, TAIL_MASS, mu)
    return (1.0 - tail) * mean + tail * value, (1.0 - tail) * shares + tail * weights


def _smax(u: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise log-sum-exp max of ``u`` (K, links) and its softmax weights."""
    top = u.max(axis=1, keepdims=True)
    e = np.exp(beta * (u - top))
    z = e.sum(axis=1, keepdims=True)
    return top[:, 0] + np.log(z[:, 0]) / beta, e / z


def solve_scenarios(
    operator: PathOperator,
    demands: np.ndarray,
    scale: np.ndarray,
    cap: np.ndarray,
    start: np.ndarray | None = None,
    *,
    betas: tuple[float, ...] = COLD_BETAS,
    steps_per_beta: int = COLD_STEPS,
    step: float = 1.0,
    shares: np.ndarray | None = None,
    tail: float = 0.0,
) -> ScenarioResult:
    """Minimise mean_k max_e U_k,e(F) / scale_k over capped-simplex routings (see the module
    docstring). ``demands`` (K, P) Gbit/s, ``scale`` (K,) > 0, ``cap`` (P, N), ``start`` a
    routing to begin from (the one in force), else each pair split by path capacity. With
    ``tail`` in [0, 1), that share of the objective is on the CVaR of the ratios (the mean of
    the worst :data:`TAIL_MASS` of them, :func:`cvar`) instead of their mean."""
    paths = operator.paths
    valid = paths.valid
    if shares is None:
        shares = np.full(len(demands), 1.0 / len(demands))
    x = project_capped_simplex(capacity_split(paths) if start is None else start, cap, valid)

    def evaluate(f: np.ndarray, beta: float) -> tuple[float, np.ndarray, float]:
        u = operator.utilisation(f, demands) * (1.0 / scale)[:, None]
        smooth, soft = _smax(u, beta)
        value, weights = tail_risk(smooth, shares, tail, 1.0 / beta)
        true = tail_risk(u.max(axis=1), shares, tail)[0]
        return value, soft * (weights / scale)[:, None], true

    best_value, best, iterations = np.inf, x, 0
    for beta in betas:
        y, t = x, 1.0
        fx, _, true = evaluate(x, beta)
        if true < best_value:
            best_value, best = true, x
        for _ in range(steps_per_beta):
            fy, soft, _ = evaluate(y, beta)
            grad = operator.gradient(soft, demands)
            while True:  # backtracking on the smoothed objective
                nxt = project_capped_simplex(y - step * grad, cap, valid)
                fn, _, true = evaluate(nxt, beta)
                move = nxt - y
                if fn <= fy + float((grad * move).sum()) + float((move * move).sum()) / (2 * step) + 1e-15:
                    break
                step *= 0.5
                if step < 1e-12:
                    break
            iterations += 1
            if true < best_value:
                best_value, best = true, nxt
            if fn > fx:  # adaptive restart: momentum overshot
                y, t = x, 1.0
                continue
            t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
            y = nxt + ((t - 1) / t_next) * (nxt - x)
            x, fx, t = nxt, fn, t_next
            step *= 1.25
    return ScenarioResult(best, best_value, iterations, step)


def halves_agree(demands: np.ndarray) -> float:
    """How surely the first half of the window ``demands`` (K, P) predicts its second half's
    jumps: the correlation r, across the n pairs, of each pair's largest share of a matrix
    above its window mean in either half, as its t-statistic ``r sqrt(n - 2) / sqrt(1 - r^2)``
    (0 with fewer than 8 matrices, 4 pairs or no spread; a few pairs make r noisy)."""
    totals = demands.sum(axis=1, keepdims=True)
    fractions = demands / np.where(totals > 0, totals, 1.0)
    half, pairs = len(fractions) // 2, fractions.shape[1]
    if half < 4 or pairs < 4:
        return 0.0
    mean = fractions.mean(axis=0)
    first, second = (fractions[:half] - mean).max(axis=0), (fractions[half:] - mean).max(axis=0)
    if first.std() == 0 or second.std() == 0:
        return 0.0
    r = float(np.corrcoef(first, second)[0, 1])
    if not np.isfinite(r):
        return 0.0
    return r * float(np.sqrt(pairs - 2)) / float(np.sqrt(max(1.0 - r * r, 1e-12)))


def with_bursts(
    operator: PathOperator,
    demands: np.ndarray,
    scale: np.ndarray,
    shares: np.ndarray | None,
    burst: float,
    room: int | None = None,
    agree: float = AGREE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The window plus one burst scenario per pair with demand: the window's mean matrix with
    that pair's share raised by a jump (a share of a matrix over the pair's mean share). When
    the window's halves agree on which pairs jump (:func:`halves_agree` at least ``agree``:
    the jumps persist, as on pod_b), each pair's own largest jump in the window; else the
    largest jump any pair made (any pair may burst as the burstiest one did, as on pod_a).
    The bursts share ``burst`` of the objective, the window the rest (in its own
    proportions). With ``room``, only that many bursts, of the pairs with the most demand
    (none fit at 64 blocks)."""
    totals = demands.sum(axis=1, keepdims=True)
    fractions = demands / np.where(totals > 0, totals, 1.0)
    above = fractions - fractions.mean(axis=0)
    own = np.maximum(above.max(axis=0), 0.0)
    jumps = own if halves_agree(demands) >= agree else np.full(len(own), max(float(above.max()), 0.0))
    mean = demands.mean(axis=0)
    pairs = np.flatnonzero((mean > 0) & (jumps > 0))
    if room is not None and len(pairs) > room:
        pairs = np.sort(pairs[np.argsort(-mean[pairs], kind="stable")[:room]])
    if not len(pairs):
        return demands, scale, shares if shares is not None else np.full(len(demands), 1.0 / len(demands))
    bursts = np.repeat(mean[None, :], len(pairs), axis=0)
    bursts[np.arange(len(pairs)), pairs] += jumps[pairs] * float(mean.sum())
    paths = operator.paths
    burst_scale = hose_bounds(operator.graph, bursts, paths.src, paths.dst)
    burst_scale = np.where(burst_scale > 0, burst_scale, 1.0)
    window = np.full(len(demands), 1.0 / len(demands)) if shares is None else shares
    all_shares = np.concatenate([(1.0 - burst) * window, np.full(len(pairs), burst / len(pairs))])
    return np.vstack([demands, bursts]), np.concatenate([scale, burst_scale]), all_shares


def _last_run(digests: list[bytes], digest: bytes | None) -> int:
    """Where the last run of ``digest`` in ``digests`` starts (a matrix seen again after the
    traffic left it is not where it came back)."""
    return max(i for i, d in enumerate(digests) if d == digest and (i == 0 or digests[i - 1] != d))


def held_count(demands: np.ndarray) -> int:
    """How many of the newest rows of ``demands`` (K, P) lie within :data:`HOLD_DISTANCE` of
    the newest (relative L1 distance): the traffic that has held since it last moved."""
    newest = demands[-1]
    volume = max(float(np.abs(newest).sum()), 1e-12)
    distance = np.abs(demands - newest).sum(axis=1) / volume
    apart = np.flatnonzero(distance > HOLD_DISTANCE)
    return len(demands) if len(apart) == 0 else len(demands) - 1 - int(apart[-1])


class ScenarioPlanner:
    """What one scenario solve hands the next: the routing in force (the warm start), the
    link graph it was planned on, and the newest matrix at which the traffic last shifted.

    The first solve starts from the capacity split (the most spread routing: on stationary
    traffic the short warm-started runs that follow keep that spread, which routes the next
    matrix better than a tighter fit). A new link graph (circuits added or drained, a stage, a
    failure) or a traffic shift, which also drops the matrices before it, starts from the
    better on the window of the capacity split and ``lp_start`` (the min-MLU routing of the
    newest matrix on that graph): the routing in force is not a fit start then.
    """

    def __init__(self) -> None:
        self.start: np.ndarray | None = None
        self.graph_key: bytes | None = None
        self.shift_at: bytes | None = None  # digest of the matrix the traffic shifted at
        self.held_at: bytes | None = None  # digest of the first matrix of a step that held
        self.suspect: bytes | None = None  # the newest matrix looked shifted: is the next too?
        self.step = 1.0  # where the last solve's backtracking ended
        self.shifts = 0

    def plan(
        self,
        operator: PathOperator,
        demands: np.ndarray,
        caps: np.ndarray,
        lp_start: Callable[[], np.ndarray],
        warm_steps: int = WARM_STEPS,
        burst: float = 0.0,
        tail: float = 0.0,
    ) -> tuple[ScenarioResult, int]:
        """The routing for ``demands`` (K, P), oldest first; also how many matrices it used."""
        import hashlib  # here: a plan without scenarios need not load OpenSSL's

        graph = operator.graph
        key = hashlib.sha1(
            graph.capacity_gbps.tobytes() + graph.link_src.tobytes() + graph.link_dst.tobytes()
        ).digest()
        digests = [hashlib.sha1(row.tobytes()).digest() for row in demands]
        if self.shift_at in digests:
            cut = _last_run(digests, self.shift_at)
            demands, digests = demands[cut:], digests[cut:]
        paths = operator.paths
        scale = hose_bounds(graph, demands, paths.src, paths.dst)
        scale = np.where(scale > 0, scale, 1.0)
        moved = self.start is not None and (self.graph_key != key or self.start.shape != paths.valid.shape)
        start = capacity_split(paths) if self.start is None or moved else self.start
        if len(demands) > 2 and not moved:
            ratios = operator.utilisation(start, demands).max(axis=1) / scale
            newest, before = ratios[-1], float(np.median(ratios[:-2]))
            held = held_count(demands)
            if 2 <= held < len(demands) and newest >= HELD_RATIO:  # moved and stayed
                self.held_at, self.shifts, moved = digests[len(demands) - held], self.shifts + 1, True
                self.suspect = None
            elif newest >= SHIFT_RATIO and newest >= SHIFT_FACTOR * before:
                if self.suspect == digests[-2]:  # the second in a row: the traffic shifted
                    self.shift_at, self.shifts, moved = digests[-2], self.shifts + 1, True
                    demands, digests, scale = demands[-2:], digests[-2:], scale[-2:]
                self.suspect = digests[-1]
            else:
                self.suspect = None
        shares = self._shares(digests)
        result = self._solve(
            operator, demands, scale, caps, start, moved, lp_start, warm_steps, shares, burst, tail
        )
        if shares is not None:
            newest = operator.utilisation(result.fractions, demands[-1:]).max() / scale[-1]
            if newest > HELD_FIT:  # the hedge costs the traffic in force too much: cut instead
                cut = _last_run(digests, self.held_at)
                self.shift_at, self.held_at = self.held_at, None
                demands, scale = demands[cut:], scale[cut:]
                result = self._solve(
                    operator, demands, scale, caps, start, True, lp_start, warm_steps, None, burst, tail
                )
        self.start, self.graph_key, self.step = result.fractions, key, result.step
        return result, len(demands)

    def _shares(self, digests: list[bytes]) -> np.ndarray | None:
        """Each matrix's weight in the objective: after a step that held, the matrices since it
        share 1 - HEDGE_SHARE and the ones before it HEDGE_SHARE (None: an equal mean)."""
        if self.held_at not in digests:
            self.held_at = None
            return None
        at = _last_run(digests, self.held_at)
        if at == 0:
            return None
        shares = np.full(len(digests), (1.0 - HEDGE_SHARE) / (len(digests) - at))
        shares[:at] = HEDGE_SHARE / at
        return shares

    def _solve(
        self,
        operator: PathOperator,
        demands: np.ndarray,
        scale: np.ndarray,
        caps: np.ndarray,
        start: np.ndarray,
        moved: bool,
        lp_start: Callable[[], np.ndarray],
        warm_steps: int,
        shares: np.ndarray | None,
        burst: float,
        tail: float,
    ) -> ScenarioResult:
        paths = operator.paths
        room = MAX_SCENARIO_ENTRIES // paths.valid.size - len(demands)
        if burst > 0.0 and len(demands) > 1 and room > 0:
            demands, scale, shares = with_bursts(operator, demands, scale, shares, burst, room)
        if moved:  # a new graph or a traffic shift: start from the better of the two on the window
            candidates = [project_capped_simplex(capacity_split(paths), caps, paths.valid), lp_start()]
            start = min(candidates, key=lambda f: mean_ratio(operator, f, demands, scale, shares, tail))
        cold = self.start is None or moved
        betas: tuple[float, ...]
        if not cold:
            betas, steps = (COLD_BETAS[-1],), warm_steps
        elif demands.size * paths.valid.shape[1] <= FULL_COLD_SOLVE_ENTRIES:
            betas, steps = COLD_BETAS, COLD_STEPS
        else:
            betas, steps = (COLD_BETAS[-1],), 2 * warm_steps
        return solve_scenarios(
            operator,
            demands,
            scale,
            caps,
            start,
            betas=betas,
            steps_per_beta=steps,
            step=1.0 if cold else self.step,
            shares=shares,
            tail=tail,
        )
