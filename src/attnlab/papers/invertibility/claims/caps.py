"""Rank caps the note does not state, each proved in :func:`attnlab.papers.invertibility.matrix.rank_cap`
and here certified exactly: the lower bound by a ball determinant, the upper bound by the proof
(and, without positions, by exhibited duplicate rows).

- With positions, every e, pos and W_QK give rank A <= 1 + P (N + L - 2): where that is below
  N^L, Theorem 1's Pd >= N^L does not give an invertible A (errata
  invertibility.cap-below-n-to-the-l). The text's statement (ledger invertibility.theorem-1) is
  checked there and differs; the claim minimal-heads and a row of the experiment
  invertibility.conditioning witness the same error.
- Without positional embeddings, rows of sequences equal up to permuting t_1..t_{L-1}
  coincide: rank A <= N C(N + L - 2, L - 1); further caps 1 + (N - 1) P and
  min(d, N) + #classes - N can bind first. The note's proof needs positions (they identify
  i_max) and says nothing without them: these caps are attnlab's, and that its construction
  reaches them is attnlab's own statement (role own: holds or refuted).
"""

from __future__ import annotations

from attnlab.checks import Check, equals
from attnlab.papers.invertibility.anchors import CAP, THEOREM_1
from attnlab.papers.invertibility.claims._cases import certified, count_rank, label
from attnlab.papers.invertibility.errata import CERTIFIED_BELOW
from attnlab.papers.invertibility.matrix import class_count
from attnlab.registry import claim

# the class count binds: Pd and 1 + (N-1) P large enough, d >= N
CLASS_GRID = ((2, 3, 2, 6), (3, 3, 3, 9), (2, 4, 2, 8), (3, 2, 3, 4), (4, 3, 4, 14), (2, 5, 2, 10))
# another cap binds first: min(d, N) + c - N (d = 1), 1 + (N-1) P (few heads)
OTHER_GRID = ((2, 3, 1, 8), (3, 3, 1, 20), (2, 4, 4, 4), (3, 3, 3, 8))


@claim(
    "invertibility.no-positions-cap",
    where="Theorem 1's proof (positions identify i_max; without them)",
    statement="attnlab's statement: without positional embeddings (where the text says nothing) the proof's "
              "construction reaches attnlab's structural cap: rank A = "
              "N C(N+L-2, L-1) (multisets of t_1..t_{L-1} times t_L) when P and d are large enough, the smaller "
              "cap otherwise; certified both ways",
)
def _no_positions(seed: int) -> Check:
    grid = CLASS_GRID + OTHER_GRID
    cases = [certified(*g, embedding="random", seed=seed, positions=False) for g in grid]
    classes = [class_count(c.N, c.L) for c in cases]
    # the lower bound must reach the cap, and the exhibited duplicate rows must leave exactly the class count
    held, bad = count_rank(cases, lambda c: c.cap)
    dup = [label(c) for c, k in zip(cases, classes) if c.null_upper != k]
    measured = held if not dup or not isinstance(held, int) else held - len(set(dup) - set(bad))
    before, after = ("N", "L", "d", "P"), ("cap", "lower", "null_upper", "prec_bits", "margin", "float_rank",
                                           "float_ratio")
    return equals(measured, len(cases), (
        f"{len(cases)} cases; not at the cap: {bad or 'none'}; duplicate rows not leaving the class count: "
        f"{dup or 'none'}; "
        + ", ".join(f"{label(c)}: rank {c.lower} (cap {c.cap}, classes {k}, float64 rank "
                    f"{c.float_rank})" for c, k in zip(cases, classes))
        + "; lower bound by ball determinant, upper by duplicate rows (classes) and rank_cap's proof"),
        {"cases": [{**c.select(before), "classes": k, **c.select(after)} for c, k in zip(cases, classes)],
         "failures": bad + dup},
        quantity="cases at the certified cap",
        role="own")  # the text needs positions; the caps and reaching them are attnlab's statement


@claim(
    "invertibility.positional-cap",
    where="Theorem 1 (Pd >= N^k)",
    statement="Theorem 1: Pd >= N^L gives rank N^L, checked where 1 + P (N + L - 2) < N^L (d > N + L - 2, few "
              "heads); there every block A^p has its columns in span{1} + an (N+L-2)-dimensional space, whatever "
              "e, pos and W_QK",
    paper_value="A invertible for every Pd >= N^k (read N^L)",
    anchor=THEOREM_1,
    falsifier="a case with Pd >= N^L whose certified rank is below N^L (here every case: 1 + P (N+L-2) < N^L "
              "caps the rank for every e, pos and W_QK)",
    erratum=CAP,
)
def _positional_cap(seed: int) -> Check:
    cases = [certified(*g, embedding="explicit") for g in CERTIFIED_BELOW]
    held, _ = count_rank(cases, lambda c: c.N ** c.L)
    at_cap, off_cap = count_rank(cases, lambda c: 1 + c.P * (c.N + c.L - 2))
    return equals(held, len(cases), (
        f"{len(cases)} cases with Pd >= N^L: "
        + ", ".join(f"{label(c)}: Pd = {c.P * c.d} >= N^L = {c.N ** c.L}, certified rank {c.lower}"
                    for c in cases)
        + f"; at the cap 1 + P (N+L-2) in {at_cap} of {len(cases)}" + (f" (not: {off_cap})" if off_cap else "")),
        {"cases": [c.select(("N", "L", "d", "P", "cap", "lower", "upper", "prec_bits", "margin")) for c in cases],
         "at_cap": at_cap if isinstance(at_cap, int) else str(at_cap)},
        quantity="cases with certified rank N^L")
