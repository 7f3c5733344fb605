"""The exact L1 projection onto "band + small sparse error", and the best permutation before it.

math-behind-transformers §3.1.2, eqs. (21)-(22): for a head's map H (n, n), find

    X~ = argmin_{X in X} |H - X|,   |M| = sum_ij |m_ij|   (the entrywise L1 norm, eq. 22)
    X  = X(w1, w2, eps, s) = {B + E : B band, E with |e_ij| <= eps and at most s nonzeros}

B is a band: b_ij = 0 unless i - w1 <= j <= i + w2 (lower and upper bandwidths, as the text's
Sigma_2; w1 = w2 = w is its "bandwidth w"). The text calls E "sparse" without a number; here s
is that number, and s = None (infinity) is the box case, where E is only bounded. Any band
entry of E can be moved into B, so X = {X : x_ij free on the band; off the band |x_ij| <= eps,
and at most s of them nonzero}. Any boolean mask can serve as the band (``band``; an empty
one gives eq. (19)'s error alone).

Closed form. Write O for the off-band entries, beta_ij = min(|h_ij|, eps) and S for the s
off-band entries with the largest beta (ties broken by row-major order; all of O if s is
None or |O| <= s). Then

    x~_ij = h_ij                    on the band
    x~_ij = clip(h_ij, -eps, eps)   on S
    x~_ij = 0                       on O \\ S
    d(H, X) = sum_O |h_ij| - sum_S beta_ij   (= sum_O max(|h_ij| - eps, 0) in the box case)

Proof. (1) Separability: |H - X| is a sum of one term per entry, and X constrains entries
one by one, except for the single count "at most s nonzeros off the band"; so for a fixed
support S' (the off-band entries allowed to be nonzero, |S'| <= s) the minimum is the sum of
per-entry minima. (2) Per entry: on the band x = h costs 0. Off the band outside S', x = 0
costs |h|. On S', x ranges over [-eps, eps], and the nearest point of an interval to h is
clip(h, -eps, eps), at cost max(|h| - eps, 0); it saves |h| - max(|h| - eps, 0) =
min(|h|, eps) = beta over leaving the entry at 0. (3) Exchange: the cost of support S' is
sum_O |h| - sum_{S'} beta, so the best S' maximises sum_{S'} beta over |S'| <= s. If S' misses
an entry e with beta_e > beta_f for some f in S', swapping f for e lowers the cost; so the s
largest beta form an optimal support, and taking fewer never helps (beta >= 0). QED.

What holds and what does not (the text invokes the Hilbert projection theorem):

- Existence holds: X is non-empty and closed (for finite s a finite union, over the supports,
  of closed boxes; for s = None one box), the distance is continuous and {X : |H - X| <=
  |H - 0|} is bounded in finite dimension, so the minimum is attained; the closed form above
  exhibits it.
- Uniqueness fails for finite s: when the s-th and (s+1)-th largest beta are equal and
  positive, both choices are minimisers with different X (``unique`` says when; exactly then,
  since every other choice of S costs more). For attention maps this is the rule, not the
  exception: every weight above eps has beta = eps, so as soon as more than s off-band weights
  exceed eps the minimiser is not unique. The L1 norm
  is not a Hilbert norm (no inner product gives it: the parallelogram law fails) and X is not
  convex for finite s (two members with different supports have a midpoint with up to 2s
  nonzeros), so Theorem 3.1 does not apply on either count.
- Uniqueness holds in the box case, with more: for every X in the box set,
      |H - X| = |H - X~| + |X - X~|.
  Per entry: on the band |h - x| = |x - h| = |x - x~|; off it, if |h| <= eps then x~ = h and
  |h - x| = |x - x~|; if h > eps then x~ = eps >= x and |h - x| = (h - eps) + (eps - x) =
  |h - x~| + |x - x~| (h < -eps alike). Any X != X~ is strictly farther. QED.

The permutation. The text projects "up to a proper permutation of rows", and rows are what
is permuted here by default: the text says rows, and permuting queries keeps every row a
distribution over the same keys, so attention to token t stays attention to token t
(``axis="columns"`` permutes keys instead). Row r of the permuted map P H is a row h_i of H,
so for the separable cases (s = None, cost
c(h) = max(|h| - eps, 0) off the band; s = 0, c(h) = |h|) the distance of P H is
sum_i C[i, pi(i)] with C[i, r] = sum_j [j not in band row r] c(h_ij): a linear assignment
problem, solved exactly by the Hungarian method (scipy.optimize.linear_sum_assignment). For
0 < s < infinity the count couples rows; the identity top_s(beta) = min_{0<=lambda<=eps}
(s lambda + sum (beta - lambda)_+) makes d = max_lambda L_lambda(pi), where
L_lambda(pi) = sum over the off-band entries of P H of (|h| - (beta - lambda)_+) - s lambda
separates over rows; so each lambda gives a lower bound min_pi L_lambda (an assignment) and its minimiser an upper
bound; when they meet the optimum is certified, otherwise small n is settled by enumerating
all n! permutations.

Baselines. A distance means something only beside the same distance of attention that looks
nowhere: uniform attention and random row-stochastic maps (rows uniform on the simplex), each
under the head's own mask. A causal (decoder) head cannot weigh keys above the diagonal, so it is
compared with causal uniform attention (row i uniform over j <= i) and causal random maps; its
fits would otherwise look structured merely for being triangular.

Shapes: the projection, the distance and membership take H (..., n, n) and return (...)
per map; the permutation works on one map (n, n) at a time (one assignment per map).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from attnlab.config import check_choice, check_int, check_number, check_seed
from attnlab.errors import ConfigError

EXHAUSTIVE_LIMIT = 8  # n! = 40320 permutations at most
MAX_LAMBDAS = 65  # lambda values tried by the certified bound for finite s
CERTIFY_RTOL = 1e-12


def band_mask(n: int, w1: int, w2: int | None = None) -> Tensor:
    """bool (n, n): True on the band i - w1 <= j <= i + w2 (w2 defaults to w1)."""
    check_int("n", n, 1)
    check_int("w1", w1, 0)
    w2 = w1 if w2 is None else check_int("w2", w2, 0)
    d = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # j - i
    return (d >= -w1) & (d <= w2)


def _matrices(H: Tensor, band: Tensor, eps: float, s: int | None) -> tuple[Tensor, Tensor, float, int | None]:
    H = torch.as_tensor(H).detach()
    if H.ndim < 2 or H.shape[-1] != H.shape[-2] or not H.is_floating_point() or not bool(torch.isfinite(H).all()):
        raise ConfigError(f"H must be finite real square matrices (..., n, n), got {tuple(H.shape)} {H.dtype}")
    band = torch.as_tensor(band)
    if band.dtype != torch.bool or band.shape[-2:] != H.shape[-2:]:
        raise ConfigError(f"band must be a boolean mask of shape {tuple(H.shape[-2:])} (band_mask(n, w1, w2))")
    eps = check_number("eps", eps, 0.0)
    if s is not None:
        s = check_int("s", s, 0)
    return H.to(torch.float64, copy=True), band, eps, s


@dataclass(frozen=True)
class BandSparseProjection:
    """X: the minimiser (..., n, n); distance: |H - X| (...); support: bool (..., n, n), the off-band
    entries S kept (clipped) rather than zeroed; unique: bool (...), no other minimiser exists;
    eps, s: the set's parameters (s None = the box case)."""

    X: Tensor
    distance: Tensor
    support: Tensor
    unique: Tensor
    eps: float
    s: int | None


def project_band_sparse(H, band, eps: float, s: int | None = None) -> BandSparseProjection:
    """The exact L1 projection of H (..., n, n) onto X(band, eps, s) (module docstring)."""
    H, band, eps, s = _matrices(H, band, eps, s)
    off = ~band.expand(H.shape)
    beta = torch.where(off, H.abs().clamp_max(eps), -1.0)  # -1: never chosen
    flat = beta.flatten(-2)
    order = torch.sort(flat, dim=-1, descending=True, stable=True)
    k = flat.shape[-1] if s is None else min(s, flat.shape[-1])
    chosen = torch.zeros_like(flat, dtype=torch.bool)
    chosen.scatter_(-1, order.indices[..., :k], True)
    support = (chosen & (flat > 0)).reshape(H.shape)
    X = torch.where(band, H, torch.where(support, H.clamp(-eps, eps), 0.0))
    distance = (H - X).abs().sum((-2, -1))
    if s is None or k == flat.shape[-1]:
        unique = torch.ones(H.shape[:-2], dtype=torch.bool)
    else:
        unique = (order.values[..., k] <= 0) | (order.values[..., k] < order.values[..., k - 1])
    return BandSparseProjection(X=X, distance=distance, support=support, unique=unique, eps=eps, s=s)


def band_sparse_distance(H, band, eps: float, s: int | None = None) -> Tensor:
    """d(H, X) (...) = sum_O |h| - sum of the s largest beta over O (module docstring)."""
    H, band, eps, s = _matrices(H, band, eps, s)
    off = ~band.expand(H.shape)
    a = torch.where(off, H.abs(), 0.0).flatten(-2)
    beta = torch.where(off, H.abs().clamp_max(eps), 0.0).flatten(-2)
    k = beta.shape[-1] if s is None else min(s, beta.shape[-1])
    return a.sum(-1) - beta.topk(k, dim=-1).values.sum(-1) if k else a.sum(-1)


def in_band_sparse(X, band, eps: float, s: int | None = None, *, tol: float = 0.0) -> Tensor:
    """bool (...): X is in X(band, eps, s): off the band |x| <= eps + tol and at most s entries with |x| > tol."""
    X, band, eps, s = _matrices(X, band, eps, s)
    off = ~band.expand(X.shape)
    small = (torch.where(off, X.abs(), 0.0) <= eps + tol).all(-1).all(-1)
    if s is None:
        return small
    return small & ((off & (X.abs() > tol)).sum((-2, -1)) <= s)


# ---- the permutation ---------------------------------------------------------------------
def placement_costs(H, band, eps: float, s: int | None = None) -> Tensor:
    """C (n, n), C[i, r] = the distance row h_i adds when placed at row r (s None or 0 only)."""
    H, band, eps, s = _matrices(H, band, eps, s)
    if s not in (None, 0):
        raise ConfigError(f"placement costs separate only for s = None (box) or s = 0, got s = {s}")
    c = H.abs() if s == 0 else (H.abs() - eps).clamp_min(0.0)  # (n, n): off-band cost of each entry
    return c.sum(-1, keepdim=True) - c @ band.to(torch.float64).transpose(-1, -2)


@dataclass(frozen=True)
class RowPermutationFit:
    """perm: int64 (n,), the permuted map is H[perm] (row r is row perm[r] of H); distance:
    d(H[perm], X); lower_bound: a proven lower bound on min over permutations (= distance when
    exact); exact: the optimum is proven; method: "assignment", "assignment-certified" or
    "exhaustive"; projection: of H[perm]; axis: "rows" or "columns" (then H[:, perm])."""

    perm: Tensor
    distance: float
    lower_bound: float
    exact: bool
    method: str
    projection: BandSparseProjection
    axis: str = "rows"


def best_row_permutation(H, band, eps: float, s: int | None = None, *, axis: str = "rows",
                         exhaustive_limit: int = EXHAUSTIVE_LIMIT) -> RowPermutationFit:
    """min over permutations pi of d(P_pi H, X(band, eps, s)) for one map H (n, n) (module docstring).

    axis="columns" permutes keys instead (H[:, perm]), solved as rows of H^T against band^T.
    """
    check_choice("axis", axis, ("rows", "columns"))
    H, band, eps, s = _matrices(H, band, eps, s)
    if H.ndim != 2:
        raise ConfigError(f"best_row_permutation takes one map (n, n), got {tuple(H.shape)}; loop over the heads")
    if axis == "columns":
        fit = best_row_permutation(H.T, band.T, eps, s, exhaustive_limit=exhaustive_limit)
        proj = project_band_sparse(H[:, fit.perm], band, eps, s)
        return RowPermutationFit(fit.perm, float(proj.distance), fit.lower_bound, fit.exact, fit.method, proj,
                                 "columns")
    n = H.shape[-1]
    if s in (None, 0):
        from scipy.optimize import linear_sum_assignment  # imported where used: scipy costs ~0.3 s to import

        C = placement_costs(H, band, eps, s).numpy()
        rows, cols = linear_sum_assignment(C)
        perm = torch.as_tensor(rows[np.argsort(cols)])  # the row of H placed at each position r
        proj = project_band_sparse(H[perm], band, eps, s)
        d = float(proj.distance)
        return RowPermutationFit(perm, d, d, True, "assignment", proj)
    best_perm, upper, lower = _certified(H, band, eps, s)
    method = "assignment-certified"
    exact = upper - lower <= CERTIFY_RTOL * max(1.0, upper)
    if not exact and n <= exhaustive_limit:
        best_perm, upper = _exhaustive(H, band, eps, s)
        lower, exact, method = upper, True, "exhaustive"
    proj = project_band_sparse(H[best_perm], band, eps, s)
    return RowPermutationFit(best_perm, float(proj.distance), lower, exact, method, proj)


def _certified(H: Tensor, band: Tensor, eps: float, s: int) -> tuple[Tensor, float, float]:
    from scipy.optimize import linear_sum_assignment

    a = H.abs()
    beta = a.clamp_max(eps)
    values = torch.unique(torch.cat([beta.flatten(), torch.tensor([0.0, eps], dtype=torch.float64)]))
    if values.numel() > MAX_LAMBDAS:
        values = torch.quantile(values, torch.linspace(0, 1, MAX_LAMBDAS, dtype=torch.float64))
    on = band.to(torch.float64)
    best = (None, math.inf)
    lower = -math.inf
    for lam in values.tolist():
        phi = a - (beta - lam).clamp_min(0.0)  # per-entry off-band cost of L_lambda
        C = (phi.sum(-1, keepdim=True) - phi @ on.T).numpy()
        rows, cols = linear_sum_assignment(C)
        lower = max(lower, float(C[rows, cols].sum()) - s * lam)
        perm = torch.as_tensor(rows[np.argsort(cols)])
        d = float(band_sparse_distance(H[perm], band, eps, s))
        if d < best[1]:
            best = (perm, d)
    return best[0], best[1], lower


def _exhaustive(H: Tensor, band: Tensor, eps: float, s: int | None) -> tuple[Tensor, float]:
    perms = torch.tensor(list(itertools.permutations(range(H.shape[-1]))))  # (n!, n)
    d = band_sparse_distance(H[perms], band, eps, s)  # (n!,)
    k = int(d.argmin())
    return perms[k], float(d[k])


def exhaustive_row_permutation(H, band, eps: float, s: int | None = None) -> tuple[Tensor, float]:
    """(perm, distance) minimising d(H[perm], X) over all n! permutations; a reference for small n."""
    H, band, eps, s = _matrices(H, band, eps, s)
    if H.ndim != 2 or H.shape[-1] > 9:
        raise ConfigError(f"exhaustive search takes one map with n <= 9, got {tuple(H.shape)}")
    return _exhaustive(H, band, eps, s)


# ---- baselines -----------------------------------------------------------------------------
def max_l1_distance(n: int) -> float:
    """2n: the largest |A - B| between row-stochastic n x n matrices (each row differs by at most 2)."""
    return 2.0 * check_int("n", n, 1)


def normalized_distance(d, n: int):
    """d / (2n), so 0 is a perfect fit and 1 the distance between disjoint one-hot rows."""
    return d / max_l1_distance(n)


def random_attention(n: int, *, seed: int, batch: tuple[int, ...] = (), causal: bool = False) -> Tensor:
    """(*batch, n, n) float64 rows drawn uniformly from the simplex (Dirichlet(1, ..., 1)), seeded;
    causal=True: row i drawn from the simplex over the keys j <= i (zero above the diagonal)."""
    check_int("n", n, 1)
    g = torch.Generator().manual_seed(check_seed(seed))
    e = -torch.log(torch.rand(*batch, n, n, generator=g, dtype=torch.float64).clamp_min(1e-300))  # Exp(1)
    if causal:
        e = e.tril()
    return e / e.sum(-1, keepdim=True)


def second_minimiser(H, band, eps: float, s: int) -> Tensor | None:
    """Another minimiser X' != X~ of |H - X| over X(band, eps, s) for one map H (n, n), or None when
    the projection is unique: the s-th chosen entry swapped for the first unchosen one of equal beta."""
    H, band, eps, s = _matrices(H, band, eps, s)
    proj = project_band_sparse(H, band, eps, s)
    if bool(proj.unique) or H.ndim != 2:
        return None
    beta = torch.where(~band, H.abs().clamp_max(eps), -1.0).flatten()
    order = torch.sort(beta, descending=True, stable=True).indices
    out_, in_ = int(order[s - 1]), int(order[s])  # equal beta > 0, or ``unique`` would be True
    X = proj.X.clone().flatten()
    X[out_], X[in_] = 0.0, H.flatten()[in_].clamp(-eps, eps)
    return X.reshape(H.shape)
