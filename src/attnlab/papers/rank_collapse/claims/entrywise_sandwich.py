"""§2.4, eqs. (6)-(10) of the rank-collapse notes: the entry-wise sandwich of P X that
Dong et al. (2021, App. A.1) derive from their Lemma A.3.

Setting (one head, no biases; X in R^{n x d}, W_QK = W_Q W_K^T in R^{d x d}):

    X = 1 x^T + R,   A = X W_QK X^T / sqrt(d_qk),   P = softmax(A) (row-wise)

Terms of A constant along a row drop out of the softmax (§2.1), leaving
A ~ 1 r^T + E with r = R W_QK^T x / sqrt(d_qk) (n,) and E = R W_QK R^T / sqrt(d_qk); so
P = softmax(1 r^T + E) and P~ := softmax(1 r^T) = 1 softmax(r)^T. Let D = diag(D_ii),
D_ii = max_{j,j'} |E_ij - E_ij'|.

Lemma A.3: P_ij / P~_ij = exp(E_ij) / sum_k P~_ik exp(E_ik) lies in [e^{-D_ii}, e^{D_ii}];
with 1 - t <= e^{-t} and e^t <= 1 + 2t (true for t <= 1.2564) this gives, entry-wise,

    (I - D) P~ <= P <= (I + 2D) P~          whenever every D_ii <= 1.2564.

Eq. (9) then multiplies this by R: P R <= (I + 2D) P~ R. **That step is wrong**: an
entry-wise inequality survives multiplication by a matrix only if the matrix is
non-negative, and R = X - 1 x^T has entries of both signs (the mean residual's columns
sum to zero). The lower bound P R >= (I - D) P~ R fails the same way. What does follow is

    |P R - P~ R| = |(P - P~) R| <= 2 D P~ |R|     (|R| entry-wise)

since -D P~ <= P - P~ <= 2 D P~; the norms ||.||_1 and ||.||_inf of |R| equal those of R,
so Dong et al.'s norm bound survives the fix. The two claims below measure the
lemma and the corrected bound (which hold) and the text's eq. (9) (which fails).
"""

from __future__ import annotations

import math

import torch

from attnlab.registry import Measurement, at_least, at_most, claim

E_LIMIT = 1.2564  # e^t <= 1 + 2t for 0 <= t <= this (root of e^t = 1 + 2t)
SCALES = (0.03, 0.1, 0.3, 1.0)  # W_QK entries ~ N(0, scale^2): D from ~0.01 to beyond E_LIMIT
TOL = 1e-12  # float64 rounding on O(1) entries


def sandwich_terms(X: torch.Tensor, W_QK: torch.Tensor, d_qk: int) -> dict[str, torch.Tensor]:
    """P, P~ = 1 softmax(r)^T, D (diagonal, as a vector), R (mean residual) for one X (n, d)."""
    x = X.mean(0)  # (d,)
    R = X - x  # (n, d)
    P = torch.softmax(X @ W_QK @ X.T / math.sqrt(d_qk), dim=-1)  # (n, n)
    r = R @ W_QK.T @ x / math.sqrt(d_qk)  # (n,)
    E = R @ W_QK @ R.T / math.sqrt(d_qk)  # (n, n)
    P_t = torch.softmax(r, dim=0).expand_as(P)  # every row softmax(r)
    D = E.amax(-1) - E.amin(-1)  # max_{j,j'} |E_ij - E_ij'|, (n,)
    return {"P": P, "P_tilde": P_t, "D": D, "R": R}


def _trials(seed: int, per_scale: int = 100, n: int = 6, d: int = 4, d_qk: int = 3):
    g = torch.Generator().manual_seed(seed)
    for scale in SCALES:
        for _ in range(per_scale):
            X = torch.randn(n, d, generator=g, dtype=torch.float64)
            W_QK = torch.randn(d, d, generator=g, dtype=torch.float64) * scale
            yield scale, sandwich_terms(X, W_QK, d_qk)


@claim(
    "rank-collapse.lemma-a3-sandwich",
    where="§2.4, eqs. (6)-(10); Dong et al. Lemma A.3",
    statement="(I - D) P~ <= P <= (I + 2D) P~ entry-wise when max D_ii <= 1.2564, and the corrected "
              "|P R - P~ R| <= 2 D P~ |R|; both fail only beyond D_ii = 1.2564",
    paper_value="entry-wise inequality (no condition on D stated in the notes)",
)
def _lemma(seed: int) -> Measurement:
    """Measured on 400 random (X, W_QK), n = 6, d = 4, d_qk = 3, W_QK ~ N(0, s^2),
    s in {0.03, 0.1, 0.3, 1}: the largest violation of the lemma and of the corrected
    bound over trials with max D <= 1.2564 (must be <= 1e-12), how tight the upper bound
    is (max (P/P~ - 1) / 2D, at most (e^D - 1)/2D -> 1/2 as D -> 0: loose by a factor 2
    for small D) and the largest violation among trials with D beyond 1.2564."""
    worst, beyond, tight, n_in, n_out = 0.0, 0.0, {}, 0, 0
    for scale, t in _trials(seed):
        P, Pt, D, R = t["P"], t["P_tilde"], t["D"][:, None], t["R"]
        viol = torch.stack([((1 - D) * Pt - P).amax(), (P - (1 + 2 * D) * Pt).amax(),
                            ((P - Pt) @ R).abs().sub(2 * D * Pt @ R.abs()).amax()]).amax().item()
        if D.max() <= E_LIMIT:
            n_in += 1
            worst = max(worst, viol)
            ratio = ((P / Pt - 1) / (2 * D)).amax().item()
            tight[scale] = max(tight.get(scale, 0.0), ratio)
        else:
            n_out += 1
            beyond = max(beyond, viol)
    detail = (f"{n_in} trials with max D_ii <= {E_LIMIT}: worst violation {worst:.1e}; tightness max (P/P~ - 1)/2D "
              + ", ".join(f"s={s}: {v:.3f}" for s, v in tight.items())
              + f"; {n_out} trials beyond: worst violation {beyond:.3g}")
    values = {"trials_within": n_in, "trials_beyond": n_out, "worst_violation_within": worst,
              "worst_violation_beyond": beyond, "upper_tightness_by_scale": tight}
    return at_most(worst, TOL, detail, values=values)


@claim(
    "rank-collapse.eq9-sign-error",
    where="§2.4, eq. (9)",
    statement="the text's P X <= 1 x^T + (I + 2D) 1 softmax(r)^T R is false entry-wise: R has entries of "
              "both signs; it fails in most random trials even with D small",
    paper_value="entry-wise inequality",
)
def _eq9(seed: int) -> Measurement:
    """Measured: the fraction of the 400 trials of the lemma's claim (restricted to
    max D_ii <= 1.2564, where Lemma A.3 holds) in which eq. (9) or its lower twin
    P R >= (I - D) P~ R is violated by more than 1e-12; passes iff at least half are."""
    bad, total, worst = 0, 0, 0.0
    for _, t in _trials(seed):
        P, Pt, D, R = t["P"], t["P_tilde"], t["D"][:, None], t["R"]
        if D.max() > E_LIMIT:
            continue
        PR = P @ R
        v = max((PR - (1 + 2 * D) * Pt @ R).amax().item(), ((1 - D) * Pt @ R - PR).amax().item())
        total += 1
        bad += v > TOL
        worst = max(worst, v)
    frac = bad / total
    detail = (f"eq. (9) or its lower bound violated in {bad}/{total} trials with max D_ii <= {E_LIMIT} "
              f"(largest violation {worst:.3g}); the fix |(P - P~) R| <= 2 D P~ |R| holds (lemma-a3-sandwich)")
    return at_least(frac, 0.5, detail, values={"violated": bad, "trials": total, "largest_violation": worst})
