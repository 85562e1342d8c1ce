"""What each collective sends, rank to rank: the formulas, one function each. Pure.

Every function returns ``(sender, receiver, bytes)`` transfers between members of one group,
given in group order (``members[i]`` is the i-th participant's rank). With ``n`` participants
and a buffer of ``B`` bytes each:

- **ring all-reduce** (reduce-scatter then all-gather, NCCL's ring): ``2 (n - 1)`` steps of
  ``B / n``, each member always to its successor: every member sends ``2 (n - 1) / n x B`` to
  the next one in the ring;
- **tree all-reduce** (a binary tree in group order, ``parent(i) = (i - 1) // 2``): every member
  but the root sends ``B`` to its parent (reduce), every parent sends ``B`` to each child
  (broadcast);
- **hierarchical all-reduce**: reduce-scatter inside each of the ``k`` blocks (``m`` members
  each, no fabric traffic), then ``m`` rings across the blocks, the j-th member of every block
  with the j-th of the next, each over ``B / m``: ``2 (k - 1) / k x B / m`` to the same member
  of the next block; then an all-gather inside the blocks;
- **all-to-all** (expert parallelism): each member sends ``V / n`` of its ``V`` bytes to every
  member, itself included (the share to itself stays put);
- **pipeline sends**: between consecutive stages, ``microbatches x activation`` forward (stage
  ``s`` to ``s + 1``) and as much backward (the activations' gradients).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Transfer = tuple[int, int, float]  # sender rank, receiver rank, bytes


def ring_all_reduce(members: Sequence[int], buffer: float) -> list[Transfer]:
    n = len(members)
    if n < 2:
        return []
    each = 2.0 * (n - 1) / n * buffer
    return [(members[i], members[(i + 1) % n], each) for i in range(n)]


def tree_all_reduce(members: Sequence[int], buffer: float) -> list[Transfer]:
    out: list[Transfer] = []
    for i in range(1, len(members)):
        parent = members[(i - 1) // 2]
        out.append((members[i], parent, buffer))  # reduce
        out.append((parent, members[i], buffer))  # broadcast
    return out


def hierarchical_all_reduce(
    members: Sequence[int], buffer: float, block_of: Callable[[int], str]
) -> list[Transfer]:
    """``members`` grouped by block (blocks in order of first member); every block must hold as
    many members as the others (the job file's check)."""
    by_block: dict[str, list[int]] = {}
    for rank in members:
        by_block.setdefault(block_of(rank), []).append(rank)
    groups = list(by_block.values())
    k, m = len(groups), len(groups[0]) if groups else 0
    if k < 2:
        return []
    if any(len(g) != m for g in groups):
        raise ValueError("hierarchical all-reduce needs as many members in every block")
    each = 2.0 * (k - 1) / k * buffer / m
    return [(groups[b][j], groups[(b + 1) % k][j], each) for j in range(m) for b in range(k)]


def all_to_all(members: Sequence[int], per_member: float) -> list[Transfer]:
    n = len(members)
    share = per_member / n if n else 0.0
    return [(a, b, share) for a in members for b in members if a != b]


def pipeline_sends(stages: Sequence[int], microbatches: int, activation: float) -> list[Transfer]:
    """``stages[s]`` is the rank holding stage ``s`` of one pipeline (one data and tensor index)."""
    volume = microbatches * activation
    out: list[Transfer] = []
    for s in range(len(stages) - 1):
        out.append((stages[s], stages[s + 1], volume))  # forward activations
        out.append((stages[s + 1], stages[s], volume))  # backward gradients
    return out
