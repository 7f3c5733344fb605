"""§2.4, eqs. (6)-(10) of the rank-collapse notes: the entry-wise sandwich of P X that
Dong et al. (2021, App. A.1) derive from their Lemma A.3.

Setting (one head, no biases; X in R^{n x d}, W_QK = W_Q W_K^T in R^{d x d}):

    X = 1 x^T + R,   A = X W_QK X^T / sqrt(d_qk),   P = softmax(A) (row-wise)

Terms of A constant along a row drop out of the softmax (§2.1), leaving
A ~ 1 r^T + E with r = R W_QK^T x / sqrt(d_qk) (n,) and E = R W_QK R^T / sqrt(d_qk); so
P = softmax(1 r^T + E) and P~ := softmax(1 r^T) = 1 softmax(r)^T. Let D = diag(D_ii),
D_ii = max_{j,j'} |E_ij - E_ij'|.

Lemma A.3: P_ij / P~_ij = exp(E_ij) / sum_k P~_ik exp(E_ik) lies in [e^{-D_ii}, e^{D_ii}];
with 1 - t <= e^{-t} (every t) and e^t <= 1 + 2t (true for 0 <= t <= 1.2564) this gives,
entry-wise,

    (I - D) P~ <= P          always,
    P <= (I + 2D) P~         whenever D_ii <= 1.2564 (sufficient, not necessary).

The notes invoke the lemma with no condition on D (as Dong et al.'s Appendix A does); the
threshold is needed by the upper half only.

Eq. (9) then multiplies this by R: P R <= (I + 2D) P~ R. **That step is wrong**: an
entry-wise inequality survives multiplication by a matrix only if the matrix is
non-negative, and R = X - 1 x^T has entries of both signs (the mean residual's columns
sum to zero). The lower bound P R >= (I - D) P~ R fails the same way. What does follow is

    |P R - P~ R| = |(P - P~) R| <= 2 D P~ |R|     (|R| entry-wise)

since -D P~ <= P - P~ <= 2 D P~; the norms ||.||_1 and ||.||_inf of |R| equal those of R,
so Dong et al.'s norm bound survives the fix. The claims below measure the lemma as the
notes invoke it (no condition: differs beyond D = 1.2564), eq. (9) as written (differs),
the lemma under its threshold (attnlab's corrected lemma, a threshold the notes do not
state: an own statement, holds) and its |R| form (a consequence: sanity). The notes do
not print Lemma A.3; they invoke it for eq. (9) ("follows from Lemma A.3"), and its
factors (I + 2D) and (I - D) are those of eq. (9) and its twin.
"""

from __future__ import annotations

from collections.abc import Iterator

import math
from dataclasses import dataclass

import torch

from attnlab.checks import Check, at_most, equals
from attnlab.registry import claim
from attnlab.stored import Stored

E_LIMIT = 1.2564  # e^t <= 1 + 2t for 0 <= t <= this (root of e^t = 1 + 2t)
SCALES = (0.03, 0.1, 0.3, 1.0)  # W_QK entries ~ N(0, scale^2): D from ~0.01 to beyond E_LIMIT
TOL = 1e-12  # float64 rounding on O(1) entries


@dataclass(frozen=True)
class SandwichTerms:
    """The terms of Lemma A.3's sandwich (I - D) P~ <= P <= (I + 2D) P~ for one X (n, d)."""

    P: torch.Tensor  # softmax(X W_QK X^T / sqrt(d_qk)) row-wise, (n, n)
    P_tilde: torch.Tensor  # P~ = 1 softmax(r)^T: every row softmax(r), (n, n)
    D: torch.Tensor  # D_ii = max_{j,j'} |E_ij - E_ij'|, the diagonal as a vector, (n,)
    R: torch.Tensor  # the mean residual X - 1 x^T, (n, d)


def sandwich_terms(X: torch.Tensor, W_QK: torch.Tensor, d_qk: int) -> SandwichTerms:
    """P, P~ = 1 softmax(r)^T, D (diagonal, as a vector), R (mean residual) for one X (n, d)."""
    x = X.mean(0)  # (d,)
    R = X - x  # (n, d)
    P = torch.softmax(X @ W_QK @ X.T / math.sqrt(d_qk), dim=-1)  # (n, n)
    r = R @ W_QK.T @ x / math.sqrt(d_qk)  # (n,)
    E = R @ W_QK @ R.T / math.sqrt(d_qk)  # (n, n)
    P_t = torch.softmax(r, dim=0).expand_as(P)  # every row softmax(r)
    D = E.amax(-1) - E.amin(-1)  # max_{j,j'} |E_ij - E_ij'|, (n,)
    return SandwichTerms(P=P, P_tilde=P_t, D=D, R=R)


def _trials(seed: int, per_scale: int = 100, n: int = 6, d: int = 4,
            d_qk: int = 3) -> Iterator[tuple[float, SandwichTerms]]:
    g = torch.Generator().manual_seed(seed)
    for scale in SCALES:
        for _ in range(per_scale):
            X = torch.randn(n, d, generator=g, dtype=torch.float64)
            W_QK = torch.randn(d, d, generator=g, dtype=torch.float64) * scale
            yield scale, sandwich_terms(X, W_QK, d_qk)


@dataclass(frozen=True)
class LemmaViolations:
    """The largest entry of lhs - rhs (> 0: violated) of each inequality, for one trial."""

    lower: float  # max_ij ((I - D) P~ - P)_ij
    upper: float  # max_ij (P - (I + 2D) P~)_ij
    abs_form: float  # max_ij (|(P - P~) R| - 2 D P~ |R|)_ij


def lemma_violations(t: SandwichTerms) -> LemmaViolations:
    """Largest violation of each half of the sandwich and of the |R| form, for one trial."""
    P, Pt, D, R = t.P, t.P_tilde, t.D[:, None], t.R
    return LemmaViolations(lower=((1 - D) * Pt - P).amax().item(), upper=(P - (1 + 2 * D) * Pt).amax().item(),
                           abs_form=((P - Pt) @ R).abs().sub(2 * D * Pt @ R.abs()).amax().item())


@dataclass(frozen=True)
class LemmaStats(Stored):
    """Lemma A.3 and the |R| form over the 400 trials, split at max_i D_ii <= E_LIMIT ("within")."""

    trials_within: int  # trials with max_i D_ii <= E_LIMIT
    trials_beyond: int  # trials with max_i D_ii > E_LIMIT
    upper_failures_beyond: int  # trials beyond in which P <= (I + 2D) P~ fails by more than TOL
    lower_within: float  # largest violation of (I - D) P~ <= P, trials within
    upper_within: float  # largest violation of P <= (I + 2D) P~, trials within
    abs_form_within: float  # largest violation of |P R - P~ R| <= 2 D P~ |R|, trials within
    lower_beyond: float  # the same three over the trials beyond
    upper_beyond: float
    abs_form_beyond: float
    smallest_max_D_with_upper_failure: float | None  # least max_i D_ii of a failing trial (None: none fails)
    upper_tightness_by_scale: dict[float, float]  # W_QK scale s -> max (P/P~ - 1) / 2D over trials within


def _lemma_stats(seed: int) -> LemmaStats:
    within: list[LemmaViolations] = []
    beyond: list[LemmaViolations] = []
    tight: dict[float, float] = {}
    smallest_failing_D = None
    for scale, t in _trials(seed):
        v = lemma_violations(t)
        Dmax = t.D.max().item()
        if Dmax <= E_LIMIT:
            within.append(v)
            P, Pt, D = t.P, t.P_tilde, t.D[:, None]
            tight[scale] = max(tight.get(scale, 0.0), ((P / Pt - 1) / (2 * D)).amax().item())
        else:
            beyond.append(v)
            if v.upper > TOL and (smallest_failing_D is None or Dmax < smallest_failing_D):
                smallest_failing_D = Dmax
    worst = lambda xs: max(xs, default=0.0)  # noqa: E731
    return LemmaStats(trials_within=len(within), trials_beyond=len(beyond),
                      upper_failures_beyond=sum(r.upper > TOL for r in beyond),
                      lower_within=worst(r.lower for r in within), upper_within=worst(r.upper for r in within),
                      abs_form_within=worst(r.abs_form for r in within), lower_beyond=worst(r.lower for r in beyond),
                      upper_beyond=worst(r.upper for r in beyond), abs_form_beyond=worst(r.abs_form for r in beyond),
                      smallest_max_D_with_upper_failure=smallest_failing_D, upper_tightness_by_scale=tight)


def _lemma_detail(st: LemmaStats) -> str:
    return (f"400 random (X, W_QK), n=6, d=4, d_qk=3, W_QK ~ N(0, s^2), s in {SCALES}: {st.trials_within} trials "
            f"with max D_ii <= {E_LIMIT}: largest lhs - rhs, lower {st.lower_within:.1e}, "
            f"upper {st.upper_within:.1e}; "
            f"{st.trials_beyond} beyond: lower {st.lower_beyond:.1e}, upper {st.upper_beyond:.3g} "
            f"(fails in {st.upper_failures_beyond}, the smallest at max D_ii = "
            + (f"{st.smallest_max_D_with_upper_failure:.3g}" if st.smallest_max_D_with_upper_failure else "-")
            + ")")


@claim(
    "rank-collapse.lemma-a3-sandwich",
    where="§2.4, after eq. (10) (Dong et al.'s Lemma A.3, invoked with no condition on D)",
    statement="(I - D) P~ <= P <= (I + 2D) P~ entry-wise, for every X and W_QK",
    paper_value="entry-wise inequality, no condition on D",
    anchor="rank-collapse.lemma-a3",
    falsifier="a trial (X, W_QK) where (I - D) P~ <= P <= (I + 2D) P~ fails entry-wise by more than 1e-12",
    erratum="rank-collapse.lemma-a3-threshold",
)
def _lemma(seed: int) -> Check:
    """Measured: the largest violation of either half over all 400 trials; the text needs
    <= 1e-12 (rounding). The upper half fails beyond D_ii = 1.2564 (e^t <= 1 + 2t fails
    there); the lower half never does (values)."""
    st = _lemma_stats(seed)
    worst = max(st.lower_within, st.upper_within, st.lower_beyond, st.upper_beyond)
    return at_most(worst, TOL, _lemma_detail(st), values=st.to_dict())


@claim(
    "rank-collapse.lemma-a3-within-threshold",
    where="Dong et al. Lemma A.3 with e^t <= 1 + 2t (t <= 1.2564), as cited in §2.4",
    statement="attnlab's corrected Lemma A.3: (I - D) P~ <= P <= (I + 2D) P~ entry-wise when every "
              "D_ii <= 1.2564; the lower half for every D",
    paper_value="not stated: the notes invoke the lemma with no condition on D",
)
def _lemma_within(seed: int) -> Check:
    """attnlab's own statement (the threshold is not in the notes): the largest violation of
    the upper half over trials with max D_ii <= 1.2564 and of the lower half over all trials;
    holds iff <= 1e-12. Values: how tight the upper half is (max (P/P~ - 1)/2D <=
    (e^D - 1)/2D -> 1/2 as D -> 0: loose by 2 for small D)."""
    st = _lemma_stats(seed)
    worst = max(st.lower_within, st.lower_beyond, st.upper_within)
    return at_most(worst, TOL, _lemma_detail(st) + "; tightness max (P/P~ - 1)/2D "
                   + ", ".join(f"s={s}: {v:.3f}" for s, v in st.upper_tightness_by_scale.items()),
                   values=st.to_dict(), role="own")


@dataclass(frozen=True)
class Eq9Stats(Stored):
    """Eq. (9) and its lower twin over the trials with max_i D_ii <= E_LIMIT (where Lemma A.3 holds)."""

    violated: int  # trials in which P R <= (I + 2D) P~ R or P R >= (I - D) P~ R fails by more than TOL
    trials: int  # trials with max_i D_ii <= E_LIMIT
    largest_violation: float  # largest lhs - rhs of either inequality over those trials


def _eq9_stats(seed: int) -> Eq9Stats:
    bad, total, worst = 0, 0, 0.0
    for _, t in _trials(seed):
        P, Pt, D, R = t.P, t.P_tilde, t.D[:, None], t.R
        if D.max() > E_LIMIT:
            continue
        PR = P @ R
        v = max((PR - (1 + 2 * D) * Pt @ R).amax().item(), ((1 - D) * Pt @ R - PR).amax().item())
        total += 1
        bad += v > TOL
        worst = max(worst, v)
    return Eq9Stats(violated=bad, trials=total, largest_violation=worst)


@claim(
    "rank-collapse.eq9-sign-error",
    where="§2.4, eq. (9) (Dong et al. App. A.1, copied; the notes' problem 1)",
    statement="P X <= 1 x^T + (I + 2D) 1 softmax(r)^T R entry-wise (eq. 9), and P X >= 1 x^T + (I - D) 1 "
              "softmax(r)^T R, wherever Lemma A.3 holds",
    paper_value="entry-wise inequality",
    anchor="rank-collapse.eq9",
    falsifier="a trial with max D_ii <= 1.2564 (Lemma A.3 holds there) where eq. (9) or its lower twin fails "
              "entry-wise by more than 1e-12",
    erratum="rank-collapse.eq9-sign",
)
def _eq9(seed: int) -> Check:
    """Measured: the number of the 400 trials with max D_ii <= 1.2564 (where Lemma A.3
    holds) in which eq. (9) or its lower twin is violated by more than 1e-12; the text
    needs 0. It fails because R has entries of both signs."""
    st = _eq9_stats(seed)
    detail = (f"eq. (9) or its lower twin violated in {st.violated}/{st.trials} trials with max D_ii <= "
              f"{E_LIMIT} (largest violation {st.largest_violation:.3g}); the |R| form holds "
              "(rank-collapse.eq9-abs-form)")
    return equals(st.violated, 0, detail, values=st.to_dict())


@claim(
    "rank-collapse.eq9-abs-form",
    where="§2.4, eqs. (9)-(10), corrected",
    statement="|P R - P~ R| <= 2 D P~ |R| entry-wise whenever every D_ii <= 1.2564 (what Lemma A.3 gives "
              "for R of either sign; ||.||_1 and ||.||_inf of |R| equal those of R)",
)
def _eq9_abs(seed: int) -> Check:
    """Sanity (a consequence of the lemma): the largest violation over trials with
    max D_ii <= 1.2564, <= 1e-12."""
    st = _lemma_stats(seed)
    return at_most(st.abs_form_within, TOL, _lemma_detail(st) + f"; |R| form within: {st.abs_form_within:.1e}, "
                   f"beyond: {st.abs_form_beyond:.3g}", values=st.to_dict(), role="sanity")
