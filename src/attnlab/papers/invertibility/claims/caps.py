"""Rank caps the note does not state, each proved in :func:`attnlab.papers.invertibility.matrix.rank_cap`
and here certified exactly: the lower bound by a ball determinant, the upper bound by the proof
(and, without positions, by exhibited duplicate rows).

- Without positional embeddings, rows of sequences equal up to permuting t_1..t_{L-1}
  coincide: rank A <= N C(N + L - 2, L - 1); further caps 1 + (N - 1) P and
  min(d, N) + #classes - N can bind first.
- With positions and d > N + L - 2: rank A <= 1 + P (N + L - 2) < min(N^L, Pd) can happen.
"""

from __future__ import annotations

from attnlab.papers.invertibility.claims._cases import certified, label
from attnlab.papers.invertibility.matrix import class_count
from attnlab.registry import Measurement, at_most, claim

# the class count binds: Pd and 1 + (N-1) P large enough, d >= N
CLASS_GRID = ((2, 3, 2, 6), (3, 3, 3, 9), (2, 4, 2, 8), (3, 2, 3, 4), (4, 3, 4, 14), (2, 5, 2, 10))
# another cap binds first: min(d, N) + c - N (d = 1), 1 + (N-1) P (few heads)
OTHER_GRID = ((2, 3, 1, 8), (3, 3, 1, 20), (2, 4, 4, 4), (3, 3, 3, 8))


@claim(
    "invertibility.no-positions-cap",
    where="Theorem 1's proof (positions identify i_max; without them)",
    statement="without positional embeddings rank A = N C(N+L-2, L-1) (multisets of t_1..t_{L-1} times t_L) when "
              "P and d are large enough, and equals the smaller structural cap otherwise: certified both ways",
)
def _no_positions(seed: int) -> Measurement:
    cases = [certified(*g, embedding="random", seed=seed, positions=False) for g in CLASS_GRID + OTHER_GRID]
    bad = []
    for c, g in zip(cases, CLASS_GRID + OTHER_GRID):
        classes = class_count(c["N"], c["L"])
        c["classes"] = classes
        if g in CLASS_GRID and not (c["lower"] == c["null_upper"] == classes == c["cap"]):
            bad.append(label(c))
        if g in OTHER_GRID and not (c["lower"] == c["cap"] < classes == c["null_upper"]):
            bad.append(label(c))
    keep = ("N", "L", "d", "P", "classes", "cap", "lower", "null_upper", "prec_bits", "margin", "float_rank",
            "float_ratio")
    return at_most(len(bad), 0, (
        f"cases whose certified rank differs from the cap, of {len(cases)}: {bad or 'none'}; "
        + ", ".join(f"{label(c)}: rank {c['lower']} (classes {c['classes']}, float64 rank {c['float_rank']})"
                    for c in cases)
        + "; lower bound by ball determinant, upper by duplicate rows (classes) and rank_cap's proof"),
        values={"cases": [{k: c[k] for k in keep} for c in cases], "failures": bad})


@claim(
    "invertibility.positional-cap",
    where="Theorem 1 (Pd >= N^L is not enough when d > N + L - 2)",
    statement="with positions, every block A^p has its columns in span{1} + an (N+L-2)-dimensional space, so "
              "rank A = 1 + P (N + L - 2) < min(N^L, Pd) when d > N + L - 2 (certified)",
    paper_value="A invertible for every Pd >= N^L",
)
def _positional_cap(seed: int) -> Measurement:
    grid = ((2, 3, 4, 2), (3, 3, 5, 6), (2, 4, 6, 3), (2, 3, 8, 1))
    cases = [certified(*g, embedding="explicit") for g in grid]
    bad = [label(c) for c in cases
           if not (c["lower"] == c["cap"] == 1 + c["P"] * (c["N"] + c["L"] - 2) < min(c["N"] ** c["L"], c["P"] * c["d"]))]
    return at_most(len(bad), 0, (
        f"cases not at the cap 1 + P(N+L-2), of {len(cases)}: {bad or 'none'}; "
        + ", ".join(f"{label(c)}: Pd = {c['P'] * c['d']} >= N^L = {c['N'] ** c['L']}, certified rank {c['lower']}"
                    for c in cases)),
        values={"cases": [{k: c[k] for k in ("N", "L", "d", "P", "cap", "lower", "prec_bits", "margin")}
                          for c in cases], "failures": bad})
