"""The text's head structure (§3.1.1-3.1.2): the families Sigma_1, Sigma_2(w), Sigma_3(T, W), and
exact fits of each to an attention map.

Eq. (19) models a head's attention weights as f(P, E~) = I_n P + E~, P in Sigma = Sigma_1 u
Sigma_2 u Sigma_3 (eq. 20), E~ "sparse" with |e~_ij| <= eps. The families, as read here:

    Sigma_1     {I_n}: every token attends to itself (the text's "positional" heads).
    Sigma_2(w)  "P = dropout(B, p), p in (0, 1)" for the band B of bandwidths (w1, w2),
                b_ij = 0 if i > j + w1 or j > i + w2 ("syntactic" heads; §3.1.2: "start with a
                multi diagonal matrix and apply a "dropout" to obtain the desired structure").
                B is the band of ones; dropout removes each band entry with probability p, the
                diagonal's as any other (the text exempts none, its Fig. 15 drops diagonal
                cells, and so does the thesis's code: ``createsintact`` drops every cell of the
                band), and does not rescale by 1/(1 - p) (a training device; the template is a
                pattern); each row is then normalised to sum to 1, since P stands for attention
                weights. A row that dropout empties cannot be normalised: no member has one
                (the thesis's code divides 0 by 0 there and never keeps such a member). So
                Sigma_2(w1, w2) is every 0/1 pattern inside the band with no empty row, each
                row divided by its count; Sigma_1 is in it (every off-diagonal cell dropped).
                p in [0, 1): the band itself (p = 0) at one end.
    Sigma_3     rare-token heads: blocks (t, a, w), rows a..a+w-1 all attend token t, with
                a <= t < a + w ("token t is attended by w surrounding tokens"); every other row
                attends itself. The base case is diag(I_{d1}, P_r, I_{d2}), d1 + w + d2 = n.

What the text gets wrong or leaves open, and the reading taken (the records, with witnesses, are
in :mod:`attnlab.papers.transformer_math.errata`):

- "P is a permutation matrix": only I_n in Sigma is one. A Sigma_3 member repeats the column
  e_t in w rows, so its rank is n - sum_i (w_i - 1) < n, and a Sigma_2 member has several
  nonzeros per row. The text's later "up to a proper permutation of rows as block-diagonal"
  is also off for Sigma_3: a Sigma_3 member already is block diagonal, and no permutation of
  rows or columns makes it diagonal (w rows share one column); the maps sigma_i:
  (1, 0, ..., 0) -> (0, ..., 1, ..., 0) act on single rows, not on the matrix.
- P_r is printed with its ones in the FIRST column (t opens its window, a = t), while
  Figure 13 has tokens 3, 4, 5 attend token 4 (t in the middle). Both are blocks (t, a, w);
  :func:`sigma3` centres the window by default and the fits allow any a <= t < a + w
  (``anchor="first"`` keeps the printed P_r). "P_r in R^{w_1 x w_1}" and "d1 + w + d2 = n"
  name the same width w_1 = w.
- Eq. (19)'s I_n P is P itself; "permutation" there is the approximant, while §3.1.2's
  closing permutation acts on the rows of H before projecting onto the set X
  (:func:`fit_band`). The symbol epsilon names both the entries of E~ and their bound, and
  §3.1.2 writes the bound on e_ij for entries called e~_ij.
- The existence-and-uniqueness argument after eq. (22): "sum of error matrices ... is an
  error matrix" fails twice (|e1 + e2| can reach 2 eps, and two supports of s entries give up
  to 2s), so X is not convex (:func:`projection_counterexample`); the limit argument for
  closedness ("is mostly 0") is loose but its conclusion holds for a fixed budget s; and
  Theorem 3.1 needs a Hilbert norm, which the L1 norm of eq. (22) is not, so uniqueness does
  not follow and indeed fails. Existence holds (closed set, continuous distance, finite
  dimension), and in the box case the projection is unique
  (:mod:`attnlab.analysis.heads.projection` proves both).

The families and this reading of the text live here, with the paper; the projection onto
band + sparse error, the assignment over permutations and the baselines are mathematics any
analysis of heads can use, so they live in the library (:mod:`attnlab.analysis.heads.projection`).

Fits. The error E~ is taken as the box |e~_ij| <= eps (s = infinity: the rows separate and,
for each P, the best E~ is unique), so the distance of H to P + E~ is

    D(H, P) = sum_ij max(|h_ij - p_ij| - eps, 0)

and each fit minimises D over its family exactly: Sigma_1 has one member; the best clamped
shift (row i -> key clamp(i + k), Voita's +-1 positional heads) by enumerating k; the best
permutation matrix (eq. 19 with P any permutation) as an assignment problem; Sigma_2 by
enumerating (w1, w2) <= w_max and, per row, the best support of every size k = 1, 2, ... within
the band, the diagonal a band cell like any other (rows separate, every kept cell of a row of
support k holds 1/k, so the best support of size k takes the k band cells whose cost changes
least from the empty row's, a sort; every dropout pattern with no empty row is searched); Sigma_3 by dynamic programming over the rows (blocks are
disjoint intervals of rows, so the best cover of rows a..n-1 extends the best cover of the
rest). No random search. Distances are also given divided by 2n, the largest L1 distance
between row-stochastic matrices, with uniform and random attention as baselines
(:func:`head_structure_report`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import Tensor

from attnlab.analysis.heads.maps import uniform_attention
from attnlab.analysis.heads.projection import (
    band_mask,
    best_row_permutation,
    normalized_distance,
    project_band_sparse,
    random_attention,
    second_minimiser,
)
from attnlab.config import check_choice, check_int, check_number, check_seed
from attnlab.errors import ConfigError

TIE_TOL = 1e-12  # distances within this are equal when the smallest parameters are reported


# ---- the families ---------------------------------------------------------------------------
def sigma1(n: int) -> Tensor:
    """I_n (n, n) float64, Sigma_1."""
    return torch.eye(check_int("n", n, 1), dtype=torch.float64)


def shifted_identity(n: int, k: int) -> Tensor:
    """(n, n) with row i one-hot at clamp(i + k, 0, n - 1): k = -1 is a previous-token head whose
    first row attends itself (what a causal model does), k = 0 is I_n."""
    check_int("n", n, 1)
    check_int("k", k)
    cols = (torch.arange(n) + k).clamp(0, n - 1)
    return torch.nn.functional.one_hot(cols, n).to(torch.float64)


def sigma2(n: int, w1: int, w2: int | None = None, p: float = 0.0, *, seed: int = 0, normalize: bool = True) -> Tensor:
    """dropout(B, p) for the band of bandwidths (w1, w2) (module docstring), (n, n) float64.

    Each band entry, the diagonal's included, is dropped independently with probability p (a seeded
    draw); a row that the draw empties is drawn again, which gives the draws the thesis keeps (its code
    discards a member with an empty row, and rows are independent). normalize=True divides each row
    by its count (row-stochastic), normalize=False returns the 0/1 pattern.
    """
    check_number("p", p, 0.0, 1.0, open_max=True)
    w2 = w1 if w2 is None else w2
    B = band_mask(n, w1, w2)
    g = torch.Generator().manual_seed(check_seed(seed))
    keep = torch.zeros(n, n, dtype=torch.bool)
    empty = torch.ones(n, dtype=torch.bool)
    while bool(empty.any()):
        draw = (torch.rand(n, n, generator=g, dtype=torch.float64) >= p) & B
        keep = torch.where(empty[:, None], draw, keep)
        empty = ~keep.any(-1)
    P = keep.to(torch.float64)
    return P / P.sum(-1, keepdim=True) if normalize else P


@dataclass(frozen=True)
class Sigma3Block:
    """Rows start .. start + width - 1 attend the token at position ``token`` (start <= token < start + width)."""

    token: int
    start: int
    width: int


def sigma3_blocks(n: int, tokens: Sequence[int], windows: Sequence[int], starts: Sequence[int] | None = None
                  ) -> list[Sigma3Block]:
    """The blocks of Sigma_3(T, W) checked: T = tokens t_1 < ... < t_s, W = windows w_i >= 1, each
    window inside [0, n), containing its token, and disjoint. starts=None centres each window on its
    token (start = t - (w - 1) // 2, moved inside [0, n - w]); starts=tokens is the printed P_r."""
    check_int("n", n, 1)
    tokens, windows = list(tokens), list(windows)
    if len(tokens) != len(windows) or any(isinstance(v, bool) or not isinstance(v, int) for v in tokens + windows):
        raise ConfigError(f"tokens and windows must be integer lists of one length, got {tokens!r} and {windows!r}")
    if starts is None:
        starts = [min(max(t - (w - 1) // 2, 0), max(n - w, 0)) for t, w in zip(tokens, windows)]
    starts = list(starts)
    if len(starts) != len(tokens):
        raise ConfigError(f"starts must give one window start per token, got {starts!r}")
    blocks, end = [], 0
    for t, a, w in sorted(zip(tokens, starts, windows), key=lambda x: x[1]):
        if w < 1 or not (0 <= a <= t < a + w <= n):
            raise ConfigError(f"token {t} with window {w} starting at {a} must satisfy 0 <= start <= token < "
                              f"start + window <= n = {n}")
        if a < end:
            raise ConfigError(f"the windows overlap at row {a}: give disjoint windows (the text concatenates blocks)")
        blocks.append(Sigma3Block(t, a, w))
        end = a + w
    return blocks


def sigma3(n: int, tokens: Sequence[int], windows: Sequence[int], starts: Sequence[int] | None = None) -> Tensor:
    """A member of Sigma_3(T, W) (n, n) float64: rows in block (t, a, w) one-hot at t, others at themselves.
    Its rank is n - sum_i (w_i - 1) (module docstring)."""
    cols = torch.arange(n)
    for b in sigma3_blocks(n, tokens, windows, starts):
        cols[b.start: b.start + b.width] = b.token
    return torch.nn.functional.one_hot(cols, n).to(torch.float64)


# ---- fits -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StructureFit:
    """family; distance D(H, P) with the box error eps; normalized = distance / 2n; P: the fitted member
    (n, n); params: the parameters found (bandwidths, shift, blocks, permutation, ...); eps."""

    family: str
    distance: float
    normalized: float
    P: Tensor
    params: dict = field(default_factory=dict)
    eps: float = 0.0


def _map(H: Tensor) -> Tensor:
    H = torch.as_tensor(H).detach()
    if H.ndim != 2 or H.shape[0] != H.shape[1] or not H.is_floating_point() or not bool(torch.isfinite(H).all()):
        raise ConfigError(f"H must be one finite square map (n, n), got shape {tuple(H.shape)}")
    return H.to(torch.float64, copy=True)


def error_cost(R: Tensor, eps: float) -> Tensor:
    """sum max(|r| - eps, 0) over the last two axes: the L1 distance of R to the box |e| <= eps."""
    return (R.abs() - eps).clamp_min(0.0).sum((-2, -1))


def _fit(family: str, H: Tensor, P: Tensor, eps: float, **params: Any) -> StructureFit:
    d = float(error_cost(H - P, eps))
    return StructureFit(family, d, normalized_distance(d, H.shape[-1]), P, params, eps)


def _row_costs(H: Tensor, eps: float) -> Tensor:
    """c[i, k] = D of row i against the one-hot row e_k."""
    g = (H.abs() - eps).clamp_min(0.0)
    return g.sum(-1, keepdim=True) - g + (H - 1).abs().sub(eps).clamp_min(0.0)


def fit_sigma1(H, eps: float = 0.0) -> StructureFit:
    """Sigma_1 = {I_n}: nothing to choose."""
    H = _map(H)
    return _fit("sigma1", H, sigma1(H.shape[-1]), check_number("eps", eps, 0.0))


def fit_shift(H, eps: float = 0.0, k_max: int = 3) -> StructureFit:
    """The best clamped shift k in [-k_max, k_max] (:func:`shifted_identity`), by enumeration."""
    H = _map(H)
    eps = check_number("eps", eps, 0.0)
    n = H.shape[-1]
    ks = sorted(range(-check_int("k_max", k_max, 0), k_max + 1), key=lambda k: (abs(k), k))
    return _smallest_best([_fit("shift", H, shifted_identity(n, k), eps, k=k) for k in ks])


def fit_permutation(H, eps: float = 0.0) -> StructureFit:
    """The best permutation matrix P (eq. 19 with P any permutation), by assignment on _row_costs."""
    H = _map(H)
    eps = check_number("eps", eps, 0.0)
    rows, cols = linear_sum_assignment(_row_costs(H, eps).numpy())
    P = torch.zeros_like(H)
    P[torch.as_tensor(rows), torch.as_tensor(cols)] = 1.0
    return _fit("permutation", H, P, eps, keys=[int(c) for c in cols])


def fit_sigma2(H, eps: float = 0.0, w_max: int = 3) -> StructureFit:
    """The best member of Sigma_2(w1, w2) over 0 <= w1, w2 <= w_max and every dropout pattern with no
    empty row, the diagonal's cells dropped like any other (module docstring); the smallest w1 + w2
    (then w1) among the best. params: w1, w2, p_hat (the fraction of the band's entries dropped),
    diagonal_kept (the fraction of rows whose diagonal cell is kept)."""
    H = _map(H)
    eps = check_number("eps", eps, 0.0)
    n = H.shape[-1]
    w_max = min(check_int("w_max", w_max, 0), n - 1)
    fits = []
    for w1, w2 in sorted(((a, b) for a in range(w_max + 1) for b in range(w_max + 1)), key=lambda x: (sum(x), x[0])):
        P, dropped, total = _best_band_rows(H, eps, w1, w2)
        fits.append(_fit("sigma2", H, P, eps, w1=w1, w2=w2, p_hat=dropped / total,
                         diagonal_kept=float((P.diagonal() > 0).double().mean())))
    return _smallest_best(fits)


def _smallest_best(fits: list[StructureFit]) -> StructureFit:
    """The first fit (the list runs from the smallest parameters up) within TIE_TOL of the best distance."""
    d = min(f.distance for f in fits)
    return next(f for f in fits if f.distance <= d + TIE_TOL)


def _best_band_rows(H: Tensor, eps: float, w1: int, w2: int) -> tuple[Tensor, int, int]:
    """The best member of Sigma_2(w1, w2) row by row: (P, band entries dropped, band entries).

    Row i of a member keeps k >= 1 of its m band cells at 1/k each. Against the empty row, keeping
    cell j changes the row's cost D by delta_j(k) = max(|h_ij - 1/k| - eps, 0) - max(|h_ij| - eps, 0),
    so the best support of size k is the k cells of smallest delta_j(k) (a sort), and the best row the
    best k. The diagonal is one of the m cells (offset 0 listed first, so a tie keeps it)."""
    n = H.shape[-1]
    offs = torch.tensor([0] + [o for o in range(-w1, w2 + 1) if o != 0], dtype=torch.int64)  # (m,)
    i = torch.arange(n)
    g = (H.abs() - eps).clamp_min(0.0)
    cols = i[:, None] + offs[None, :]  # (n, m)
    valid = (cols >= 0) & (cols < n)
    colc = cols.clamp(0, n - 1)
    h = torch.gather(H, 1, colc)  # (n, m): the band entries of each row
    gh = torch.gather(g, 1, colc)
    m = offs.numel()
    best_cost = torch.full((n,), math.inf, dtype=torch.float64)
    best_k = torch.ones(n, dtype=torch.int64)
    best_order = torch.zeros(n, m, dtype=torch.int64)
    for k in range(1, m + 1):  # support size
        delta = torch.where(valid, (h - 1.0 / k).abs().sub(eps).clamp_min(0.0) - gh, math.inf)  # (n, m)
        srt, order = delta.sort(dim=-1, stable=True)
        cost = srt[:, :k].sum(-1)  # change from the empty row; inf when the row has fewer than k band cells
        better = cost < best_cost - TIE_TOL
        best_cost = torch.where(better, cost, best_cost)
        best_k = torch.where(better, k, best_k)
        best_order = torch.where(better[:, None], order, best_order)
    P = torch.zeros_like(H)
    for r in range(n):
        k = int(best_k[r])
        P[r, colc[r, best_order[r, :k]]] = 1.0 / k
    total = int(valid.sum())
    return P, total - int(best_k.sum()), total


def fit_sigma3(H, eps: float = 0.0, max_width: int | None = None, max_blocks: int | None = None,
               anchor: str = "any") -> StructureFit:
    """The best member of Sigma_3 by dynamic programming over the rows (module docstring).

    Blocks have width 2..max_width (default n), at most max_blocks of them (default: no limit);
    anchor="any" lets the token sit anywhere in its window, "first" only at its start (the printed
    P_r). params: blocks [(token, start, width), ...]."""
    H = _map(H)
    eps = check_number("eps", eps, 0.0)
    check_choice("anchor", anchor, ("any", "first"))
    n = H.shape[-1]
    W = n if max_width is None else min(check_int("max_width", max_width, 1), n)
    B = n if max_blocks is None else check_int("max_blocks", max_blocks, 0)
    c = _row_costs(H, eps).numpy()  # (n, n)
    cum = np.vstack([np.zeros((1, n)), np.cumsum(c, 0)])  # cum[a, t] = sum_{i < a} c[i, t]
    f = np.zeros((n + 1, B + 1))
    choice = np.zeros((n + 1, B + 1, 2), dtype=np.int64)  # (width, token); width 1 = identity row
    for a in range(n - 1, -1, -1):
        for b in range(B + 1):
            f[a, b], choice[a, b] = c[a, a] + f[a + 1, b], (1, a)
            if b == 0:
                continue
            for w in range(2, min(W, n - a) + 1):
                ts = np.arange(a, a + 1) if anchor == "first" else np.arange(a, a + w)
                costs = cum[a + w, ts] - cum[a, ts]
                t = int(ts[np.argmin(costs)])
                total = float(costs.min()) + f[a + w, b - 1]
                if total < f[a, b] - TIE_TOL:
                    f[a, b], choice[a, b] = total, (w, t)
    blocks, cols, a, b = [], torch.arange(n), 0, B
    while a < n:
        w, t = (int(x) for x in choice[a, b])
        if w > 1:
            blocks.append((t, a, w))
            cols[a: a + w] = t
            b -= 1
        a += w
    P = torch.nn.functional.one_hot(cols, n).to(torch.float64)
    return _fit("sigma3", H, P, eps, blocks=blocks, anchor=anchor)


def fit_band(H, w: int = 1, eps: float = 0.0, s: int | None = None) -> StructureFit:
    """The set X of §3.1.2 after the best permutation of rows: min_pi d(H[pi], X(w, w, eps, s))
    (:func:`attnlab.analysis.heads.projection.best_row_permutation`); P is the projection of H[pi]
    and the distance the projection's (with the sparse budget s, not the box error)."""
    H = _map(H)
    fit = best_row_permutation(H, band_mask(H.shape[-1], check_int("w", w, 0)), eps, s)
    return StructureFit("band", fit.distance, normalized_distance(fit.distance, H.shape[-1]), fit.projection.X,
                        {"w": w, "s": s, "perm": fit.perm.tolist(), "exact": fit.exact, "method": fit.method}, eps)


# ---- the families at once, and a head's label ----------------------------------------------------
SIGMA = ("shift", "sigma2", "sigma3")
"""The families whose minimum is d_Sigma, simplest first (Sigma_1 = the shift k = 0 is in all three)."""
LABELS = ("positional", "syntactic", "rare-token", "special-token", "unstructured")


def fit_families(H, w_max: int = 3) -> dict[str, StructureFit]:
    """{family: exact fit} of one square map with eps = 0 (the plain L1 distance of eq. 22): Sigma_1,
    the best clamped shift |k| <= w_max, the best permutation matrix, Sigma_2(w1, w2 <= w_max) and Sigma_3."""
    H = _map(H)
    w = min(check_int("w_max", w_max, 0), H.shape[-1] - 1)
    return {"sigma1": fit_sigma1(H), "shift": fit_shift(H, 0.0, w), "permutation": fit_permutation(H),
            "sigma2": fit_sigma2(H, 0.0, w), "sigma3": fit_sigma3(H)}


def best_sigma(fits: dict) -> StructureFit:
    """The fit realising d_Sigma = min(d_shift, d_Sigma2, d_Sigma3) (the simplest family on a tie)."""
    return min((fits[k] for k in SIGMA), key=lambda f: f.distance)


def sigma_distance(fits: dict) -> float:
    """d_Sigma of :func:`fit_families`' fits."""
    return best_sigma(fits).distance


def special_share(fit: StructureFit, special) -> float:
    """The share of the rows in a Sigma_3 fit's blocks whose token is a special position (``special``:
    [CLS], [SEP], BOS, EOS positions); 0 when the fit has no block."""
    special = {int(p) for p in special}
    rows = sum(w for _, _, w in fit.params.get("blocks", []))
    hit = sum(w for t, _, w in fit.params.get("blocks", []) if t in special)
    return hit / rows if rows else 0.0


def label_from_distances(d: dict, n: int, uniform_sigma: float, margin: float = 0.05,
                         special: float = 0.0) -> str:
    """A head's label from its (mean) distances d = {family: distance, "sigma": d_Sigma}:

        unstructured   d_Sigma / 2n >= uniform_sigma: no closer to Sigma than uniform attention
                       under the same mask (``uniform_sigma``: causal uniform for a causal head);
        positional     else if min(d_Sigma1, d_shift) <= d_Sigma + margin 2n (a diagonal or a
                       shifted diagonal is as good as anything in Sigma);
        syntactic      else if d_Sigma2 <= d_Sigma3;
        special-token  else if at least half the rows of its Sigma_3 blocks attend a special token
                       (``special``: that share; a head on [CLS]/[SEP] or BOS is not a rare-token head);
        rare-token     otherwise."""
    if normalized_distance(d["sigma"], n) >= uniform_sigma:
        return "unstructured"
    if min(d["sigma1"], d["shift"]) <= d["sigma"] + margin * 2 * n:
        return "positional"
    if d["sigma2"] <= d["sigma3"]:
        return "syntactic"
    return "special-token" if special >= 0.5 else "rare-token"


# ---- the report with baselines --------------------------------------------------------------
FAMILIES = ("sigma1", "shift", "permutation", "sigma2", "sigma3", "band")


@dataclass(frozen=True)
class HeadStructureReport:
    """fits: {family: StructureFit of H}; uniform, random: {family: normalised distance of uniform
    attention and the mean over ``draws`` random row-stochastic maps}; n; settings."""

    fits: dict
    uniform: dict
    random: dict
    n: int
    settings: dict

    def rows(self) -> list[dict]:
        """One row per family: distance, normalised, and the two baselines (normalised)."""
        return [{"family": k, "distance": f.distance, "normalized": f.normalized, "uniform": self.uniform[k],
                 "random": self.random[k], **{f"param_{p}": v for p, v in f.params.items()}}
                for k, f in self.fits.items()]


def head_structure_report(H, *, eps: float = 0.0, w_max: int = 3, band_w: int = 1, s: int | None = None,
                          max_blocks: int | None = None, seed: int = 0, draws: int = 4) -> HeadStructureReport:
    """Every family's exact fit of H (n, n), beside the same fits of uniform attention and of ``draws``
    random row-stochastic maps (seeded), all normalised by 2n."""
    H = _map(H)
    n = H.shape[-1]
    check_int("draws", draws, 1)
    fitters: dict[str, Callable[[Tensor], StructureFit]] = {
        "sigma1": lambda M: fit_sigma1(M, eps), "shift": lambda M: fit_shift(M, eps, min(w_max, n - 1)),
        "permutation": lambda M: fit_permutation(M, eps), "sigma2": lambda M: fit_sigma2(M, eps, w_max),
        "sigma3": lambda M: fit_sigma3(M, eps, max_blocks=max_blocks), "band": lambda M: fit_band(M, band_w, eps, s)}
    fits = {k: fit(H) for k, fit in fitters.items()}
    U = uniform_attention(n)
    R = random_attention(n, seed=seed, batch=(draws,))
    uniform = {k: fit(U).normalized for k, fit in fitters.items()}
    rand = {k: float(np.mean([fit(r).normalized for r in R])) for k, fit in fitters.items()}
    return HeadStructureReport(fits, uniform, rand, n, {"eps": eps, "w_max": w_max, "band_w": band_w, "s": s,
                                                        "max_blocks": max_blocks, "seed": seed, "draws": draws})


# ---- the text's existence-and-uniqueness argument ---------------------------------------------
@dataclass(frozen=True)
class ProjectionCounterexample:
    """H (n, n) with two minimisers X1 != X2 of |H - X| over X(band, eps, s): distance1 = distance2,
    difference = |X1 - X2|; their midpoint M = (X1 + X2)/2, its count of nonzeros off the band
    (midpoint_nonzeros > s: M is not in X) and its distance |H - M|."""

    H: Tensor
    X1: Tensor
    X2: Tensor
    band: Tensor
    eps: float
    s: int
    distance1: float
    distance2: float
    difference: float
    midpoint_nonzeros: int
    midpoint_distance: float


def projection_counterexample(H=None, *, w: int = 0, eps: float = 0.1, s: int = 1) -> ProjectionCounterexample:
    """Two minimisers of eq. (21) and a midpoint outside X, for H (default: the 3 x 3 map
    [[0.7, 0, 0.3], [0, 1, 0], [0.3, 0, 0.7]] with w = 0, eps = 0.1, s = 1, whose two off-band
    weights 0.3 tie: d = 0.6 - 0.1 = 0.5 either way). ConfigError if H's projection is unique."""
    if H is None:
        H = torch.tensor([[0.7, 0.0, 0.3], [0.0, 1.0, 0.0], [0.3, 0.0, 0.7]], dtype=torch.float64)
    H = _map(H)
    band = band_mask(H.shape[-1], check_int("w", w, 0))
    X1 = project_band_sparse(H, band, eps, s).X
    X2 = second_minimiser(H, band, eps, s)
    if X2 is None:
        raise ConfigError("this H has a unique projection: give one whose s-th and (s+1)-th largest off-band "
                          "min(|h|, eps) tie")
    M = (X1 + X2) / 2
    return ProjectionCounterexample(H, X1, X2, band, eps, s, float((H - X1).abs().sum()), float((H - X2).abs().sum()),
                                    float((X1 - X2).abs().sum()), int(((M != 0) & ~band).sum()),
                                    float((H - M).abs().sum()))
