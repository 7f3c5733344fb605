"""Theorem 1 and its number of heads, with every rank certified by a ball determinant.

Theorem 1 (ledger invertibility.theorem-1, read with Pd >= N^L; errata invertibility.n-to-the-k):
with the proof's W_QK^p = w_p E_11 and embeddings with properties (1)-(2), A is invertible. Every
embedding and every W_QK give rank A <= min(N^L, Pd, 1 + P (N + L - 2))
(:func:`attnlab.papers.invertibility.matrix.rank_cap`, a proof), so the theorem can hold only where
also 1 + P (N + L - 2) >= N^L (errata invertibility.cap-below-n-to-the-l); there it is
certified, for d <= N + L - 2 and beyond. The number of heads the text implies, ceil(N^L / d),
is therefore too small when d > N + L - 2: P >= max(ceil(N^L / d), ceil((N^L - 1) / (N + L - 2)))
is necessary (proved); that this P suffices is attnlab's conjecture, certified in the cases of
the claim minimal-heads. Below ceil(N^L / d) heads the construction has rank Pd: attnlab's own
statement (the text states only the direction Pd >= N^L), claim fewer-heads-rank-Pd.
"""

from __future__ import annotations

from attnlab.checks import Check

import math
from dataclasses import dataclass

from attnlab.checks import Bound, equals
from attnlab.papers.invertibility.anchors import CAP, THEOREM_1
from attnlab.papers.invertibility.claims._cases import CertifiedCase, certified, count_rank
from attnlab.papers.invertibility.errata import CERTIFIED_FULL
from attnlab.papers.invertibility.matrix import minimal_heads
from attnlab.registry import claim

# (N, L, d) with d <= N + L - 2 and N^L <= 64, at P = ceil(N^L / d)
FULL_GRID = ((2, 2, 2), (2, 3, 2), (2, 3, 3), (3, 2, 3), (2, 4, 4), (3, 3, 4), (2, 5, 5), (4, 3, 5), (2, 6, 6))
# (N, L, d) of the minimal-heads claim: three with d <= N + L - 2, three beyond
HEADS_GRID = ((2, 4, 4), (3, 3, 4), (2, 5, 5), (2, 3, 4), (3, 3, 5), (2, 4, 6))


SUMMARY_KEYS = ("N", "L", "d", "P", "embedding", "cap", "lower", "upper", "prec_bits", "margin", "log10_det",
                "float_rank", "float_ratio")
"""the fields of each case a claim stores"""


@dataclass(frozen=True)
class CertificateSummary:
    """The certificates of a claim's cases, and their extremes."""

    cases: list[CertifiedCase]  # the certified cases, in order
    max_prec_bits: int  # the largest working precision any certificate needed, in bits
    min_margin: float  # the smallest 1 - D_rad / |D_mid| over the cases
    min_log10_det: float  # the smallest lower bound on log10 |det| over the cases
    float_rank_wrong: int  # cases whose float64 rank differs from the certified upper bound

    def to_dict(self) -> dict:
        """The stored form (the claim's values, before its failures)."""
        return dict(cases=[c.select(SUMMARY_KEYS) for c in self.cases], max_prec_bits=self.max_prec_bits,
                    min_margin=self.min_margin, min_log10_det=self.min_log10_det,
                    float_rank_wrong=self.float_rank_wrong)


def _summary(cases: list[CertifiedCase]) -> CertificateSummary:
    return CertificateSummary(cases=cases, max_prec_bits=max(c.prec_bits for c in cases),
                              min_margin=min(c.margin for c in cases),
                              min_log10_det=min(c.log10_det for c in cases),
                              float_rank_wrong=sum(c.float_rank != c.upper for c in cases))


@claim(
    "invertibility.theorem1-full-rank",
    where="Theorem 1",
    statement="with W_QK^p = w_p E_11, embeddings with properties (1)-(2) and Pd >= N^L, A has rank N^L: "
              "certified for explicit and random positive embeddings wherever also 1 + P (N+L-2) >= N^L "
              "(d <= N + L - 2 at P = ceil(N^L/d), and d > N + L - 2 with enough heads)",
    paper_value="A invertible for Pd >= N^k (read N^L)",
    anchor=THEOREM_1,
    falsifier="a case with Pd >= N^L and 1 + P (N+L-2) >= N^L whose certified rank is below N^L",
)
def _full_rank(seed: int) -> Check:
    cases = []
    for N, L, d in FULL_GRID:
        P = math.ceil(N ** L / d)
        cases.append(certified(N, L, d, P, embedding="explicit"))
        cases.append(certified(N, L, d, P, embedding="random", seed=seed))
    for N, L, d, P in CERTIFIED_FULL:  # d > N + L - 2, P = the minimal one, 1 + P (N+L-2) >= N^L
        cases.append(certified(N, L, d, P, embedding="explicit"))
        cases.append(certified(N, L, d, P, embedding="random", seed=seed))
    held, bad = count_rank(cases, lambda c: c.N ** c.L)
    s = _summary(cases)
    beyond = [c for c in cases if c.d > c.N + c.L - 2]
    return equals(held, len(cases), (
        f"{len(cases)} cases ({len(FULL_GRID)} (N,L,d) with d <= N + L - 2 at P = ceil(N^L/d), and "
        f"{len(CERTIFIED_FULL)} (N,L,d,P) with d > N + L - 2 at the minimal P, each with explicit and random "
        f"embeddings, w_p = 0.1 p); not at N^L: {bad or 'none'}; ball determinants exclude 0 at <= "
        f"{s.max_prec_bits} bits, margin >= {s.min_margin:.3g}, |det| >= 1e{s.min_log10_det:.0f}; float64 "
        f"rank wrong in {s.float_rank_wrong} cases"),
        {**s.to_dict(), "failures": bad, "beyond": [dict(N=c.N, L=c.L, d=c.d, P=c.P, rank=c.lower)
                                                     for c in beyond if c.embedding == "explicit"]},
        quantity="cases with certified rank N^L")


@claim(
    "invertibility.minimal-heads",
    where="Theorem 1 (the bound Pd >= N^k)",
    statement="the fewest heads giving rank N^L is P = ceil(N^L / d): rank A <= Pd makes it necessary and "
              "Theorem 1 makes it sufficient",
    paper_value="Pd >= N^k heads suffice",
    anchor=THEOREM_1,
    falsifier="an (N, L, d) whose certified minimal P (rank N^L at P, below N^L at P - 1) is not ceil(N^L/d)",
    erratum=CAP,  # where ceil(N^L/d) heads fall short, the cap 1 + P (N+L-2) < N^L stops them: one error
)
def _minimal_heads(seed: int) -> Check:
    rows, matches, undecided = [], 0, 0
    for N, L, d in HEADS_GRID:
        T = N ** L
        P = minimal_heads(N, L, d)
        at = certified(N, L, d, P, embedding="random", seed=seed)
        below = certified(N, L, d, P - 1, embedding="random", seed=seed) if P > 1 else None
        pinned = at.lower == T and (below is None or below.upper < T)
        text = math.ceil(T / d)
        corrected = max(math.ceil(T / d), math.ceil((T - 1) / (N + L - 2)))
        rows.append(dict(N=N, L=L, d=d, minimal_P=P if pinned else None, text_P=text, corrected_P=corrected,
                         rank_at=at.lower, rank_below=None if below is None else below.upper,
                         cap_below=None if below is None else below.cap))
        undecided += not pinned
        matches += pinned and P == text
    measured = Bound(matches, matches + undecided, "a certificate did not pin the minimal P") if undecided else matches
    differ = [r for r in rows if r["minimal_P"] is not None and r["minimal_P"] != r["text_P"]]
    return equals(measured, len(HEADS_GRID), (
        "certified minimal P (rank N^L at P, rank < N^L at P - 1) against ceil(N^L/d): "
        + ", ".join(f"(N,L,d)=({r['N']},{r['L']},{r['d']}): {r['minimal_P']} vs {r['text_P']}" for r in rows)
        + ("; at P = ceil(N^L/d) the rank stops at 1 + P (N+L-2) for "
           + ", ".join(f"({r['N']},{r['L']},{r['d']}): {r['rank_below']} < {r['N'] ** r['L']}" for r in differ)
           if differ else "")
        + "; the certified minimal P equals max(ceil(N^L/d), ceil((N^L-1)/(N+L-2))) (necessary by the cap; "
        + f"sufficient: attnlab's conjecture) in {sum(r['minimal_P'] == r['corrected_P'] for r in rows)} of "
        + f"{len(rows)}"),
        {"cases": rows, "corrected_matches": sum(r["minimal_P"] == r["corrected_P"] for r in rows)},
        quantity="(N, L, d) whose certified minimal P equals ceil(N^L/d)")


@claim(
    "invertibility.fewer-heads-rank-Pd",
    where="Theorem 1 (P below ceil(N^L/d); the text states only Pd >= N^L)",
    statement="attnlab's statement (part of its rank-cap conjecture): with fewer heads than ceil(N^L/d) "
              "(d <= N + L - 2) the proof's construction has full column rank Pd (certified for every P below "
              "ceil(N^L/d))",
)
def _fewer_heads(seed: int) -> Check:
    cases = [certified(N, L, d, P, embedding="explicit")
             for N, L, d in ((2, 4, 4), (3, 3, 4), (2, 5, 5)) for P in range(1, math.ceil(N ** L / d))]
    held, bad = count_rank(cases, lambda c: c.P * c.d)
    s = _summary(cases)
    return equals(held, len(cases), (
        f"{len(cases)} cases ((N,L,d) = (2,4,4), (3,3,4), (2,5,5), P = 1 .. ceil(N^L/d) - 1); not at Pd: "
        f"{bad or 'none'}; <= {s.max_prec_bits} bits, margin >= {s.min_margin:.3g}"),
        {**s.to_dict(), "failures": bad}, quantity="cases with certified rank Pd",
        role="own")  # rank = Pd below N^L is attnlab's statement: the text says nothing for Pd < N^L


__all__ = ["FULL_GRID", "HEADS_GRID"]
