"""Theorem 1 of memorization-capacity-of-mha as a construction: weights that memorize.

Theorem 1 (§4): with n < d, d_v >= d_out, r = min(n, d_h), Assumption 1 (the queries
e^(t) have Kruskal rank >= n) and Assumption 2 (every context E^(t) has rank n), one
MHA layer memorizes any T <= H (r - 1) + 1 labels. The proof (§4.1, Appendix B) has
two steps, and so has :func:`build_memorizing_weights`:

Step 1 (Proposition 1, rank Z >= min(H (r - 1) + 1, T)), by induction on the heads:
  head 1 realises r chosen softmax vectors theta_* on examples 1..r (Claim 1); head
  h + 1 realises r - 1 more on the next r - 1 "fresh" examples, with logits
  W = W* + c W+, where W* solves Claim 1 for the fresh examples and W+ (Lemma 3)
  vanishes on them and saturates the softmax on all earlier examples (Lemma 4), so
  that head h + 1 adds r - 1 to the rank without undoing the earlier rows.
Step 2: solve Z W_V = [y | 0] for the stacked W_V (Hd x d_v); W_O stacks H copies of
  I_{d_v x d}, W_D = I_{d x d_out} (eq. (8)), so y_hat^(t) = y^(t).

Everything is float64 with a finite c per head: Appendix B.2's sufficient condition
gives c_required (computed, not guessed); the build then uses the smallest c_required
10^-k for which B.2's conclusion (sigma_min of the fresh block) is measured to hold. Where an assumption fails, Remark 1's weaker
bound H (min(Q, d_h) - 1) + 1 (Q the queries' Kruskal rank) is used instead.

Typos in the paper, implemented as the mathematics requires:
- Claim 2: R^c = [T'] - R (the paper writes [T] - R).
- Lemma 3's proof: "for all m+1 <= t <= T" (the paper writes d); Lemma 3 needs only
  Kruskal rank >= m + 1, not n.
- Appendix B.2: [Z''_a,delta]_t = E^(t)T theta_delta^(t) (the paper writes theta_delta^(t+T')).
- The sketch's "d_H <= d" means d_h <= d; eq. (8)'s "in R" means R^{d_out}.
- Not a typo: the proof picks the fresh rows of Z' among those dependent on its first
  k = rank Z' rows (reordering the examples), so they lie in the row space of Z'_a. The
  construction gives each head a fixed block of examples instead; with per-example contexts
  its fresh rows need not lie there, and the rank argument still holds (see _new_head).
"""

from __future__ import annotations

from typing import Callable, Sequence

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import solve_triangular

from attnlab.config import Config, check_bool, check_int, check_number, check_seed, param
from attnlab.errors import ConfigError
from attnlab.papers.memorization.data import draw_dataset
from attnlab.papers.memorization.model import (
    attention_features,
    context_ranks,
    memorization_bound,
    memorization_forward,
    rank_and_sigma_min,
    softmax,
)
from attnlab.checks import at_most
from attnlab.estimates import Estimate, matmul_flops, qr_flops, require_fits, svd_flops
from attnlab.registry import Construction, ConstructionResult, register_construction

LOGIT_SCALE = 2.0  # std of the logits alpha_* chosen for each head's fresh examples


class _SubsetFailure(Exception):
    """A linear-independence condition the construction needs fails on the data."""


@dataclass(frozen=True)
class MemorizingWeights:
    """Weights of eqs. (1)-(6) that memorize a data set, with what the build measured.

    W_Q, W_K: (H, d, d_h)  W_V: (H, d, d_v)  W_O: (H d_v, d)  W_D: (d, d_out).
    r, bound, bound_name: r = min(n, d_h) and T <= H (r-1) + 1 (Theorem 1), or the
    smaller r of Remark 1 when an assumption fails (``notes`` says which).
    blocks[h]: the examples head h was made responsible for.
    c_[h]: the saturation scale of head h (||W+||_2 = 1); c_required_[h]: App. B.2's bound
    (c_ <= c_required_ unless c was given; see _smallest_valid_c).
    rank_Z_, sigma_min_Z_, rank_tol_: rank and smallest singular value of Z (eq. (7)).
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    W_D: np.ndarray
    skip: bool
    r: int
    bound: int
    bound_name: str
    notes: tuple[str, ...]
    blocks: tuple[tuple[int, ...], ...]
    c_: np.ndarray = field(repr=False)
    c_required_: np.ndarray = field(repr=False)
    rank_Z_: int = 0
    sigma_min_Z_: float = 0.0
    rank_tol_: float = 0.0
    class_codes: np.ndarray | None = field(default=None, repr=False)

    def matrices(self) -> dict[str, np.ndarray]:
        return dict(W_Q=self.W_Q, W_K=self.W_K, W_V=self.W_V, W_O=self.W_O, W_D=self.W_D)


def build_memorizing_weights(E, e, y, *, H: int, d_h: int, c: float | None = None, d_v: int | None = None,
                             skip: bool = False, seed: int = 0, n_classes: int | None = None
                             ) -> MemorizingWeights:
    """Weights with y_hat^(t) = y^(t) for all t (Theorem 1's proof, float64).

    E: (n, d) shared or (T, n, d); e: (T, d); y: (T, d_out) or (T,) real labels, or
    integer classes (T,) (memorized as one-hot rows of width n_classes, default
    max(y) + 1; as +-s_i codes when n_classes > d, see _class_codes). c: one saturation scale for every head (default: per head, the smallest
    c_required 10^-k that keeps App. B.2's Weyl step, measured).
    d_v defaults to d_out. skip: memorize for o = W_O^T p + e (Appendix C: labels
    y - I_{d_out x d} e). seed draws the theta_* logits and Lemma 3's directions.
    """
    E, e, Y, codes = _prepare(E, e, y, n_classes)
    T, d = e.shape
    n, d_out = E.shape[-2], Y.shape[1]
    d_v = d_out if d_v is None else d_v
    _validate(H=H, d_h=d_h, d_v=d_v, d_out=d_out, n=n, d=d, c=c)
    r, name, notes = _capacity(E, e, d_h)
    while True:
        bound = memorization_bound(H, r)
        if T > bound:
            raise ConfigError(
                f"T = {T} exceeds {name}'s bound H(r-1)+1 = {bound} (H = {H}, r = {r}"
                f"{'; ' + '; '.join(notes) if notes else ''}): lower T or raise H or d_h")
        try:
            W_Q, W_K, c_, c_req, blocks = _step1(E, e, H, d_h, r, c, np.random.default_rng(seed))
            break
        except _SubsetFailure as fail:  # Remark 1: the queries' Kruskal rank is below r
            notes = (*notes, f"Assumption 1 fails ({fail}); Remark 1 with r = {r - 1}")
            r, name = r - 1, "Remark 1"
    Z = attention_features(E, e, W_Q, W_K)
    rank, smin, tol = rank_and_sigma_min(Z)
    solve = _min_norm_solver(Z)  # Z^+ (.), shared by step 2 and its refinement
    W_V, W_O, W_D = _step2(solve, Y - e[:, :d_out] if skip else Y, H, d, d_v)
    W_V = _refine(E, e, Y, solve, W_Q, W_K, W_V, W_O, W_D, skip)
    if codes is not None:
        W_D = W_D @ codes.T  # logits y_hat_j = u_j^T u_y: (d, m) @ (m, k) -> (d, k)
    return MemorizingWeights(W_Q, W_K, W_V, W_O, W_D, skip, r, bound, name, tuple(notes), blocks,
                             c_, c_req, rank, smin, tol, codes)


def memorize_drawn_dataset(T: int, n: int, d: int, d_out: int, *, H: int, d_h: int, shared: bool,
                           seed: int) -> tuple[tuple, MemorizingWeights, dict]:
    """Theorem 1's weights for T examples drawn as in §5.2 (:func:`draw_dataset` with ``seed``),
    built with ``seed`` and checked: -> ((E, e, y), weights, :func:`check_memorization`'s numbers)."""
    E, e, y = draw_dataset(T, n, d, d_out, shared=shared, seed=seed)
    weights = build_memorizing_weights(E, e, y, H=H, d_h=d_h, seed=seed)
    return (E, e, y), weights, check_memorization(weights, E, e, y)


def check_memorization(weights: MemorizingWeights, E, e, y) -> dict:
    """Measure what the weights do on (E, e, y): max |y_hat - y| (regression, or against
    the one-hot rows for integer classes, with argmax accuracy), rank Z with its
    tolerance, sigma_min(Z), and the largest saturation scale c."""
    E, e = np.asarray(E, np.float64), np.asarray(e, np.float64)
    y = np.asarray(y)
    y_hat = memorization_forward(E, e, **weights.matrices(), skip=weights.skip)
    rank, smin, tol = rank_and_sigma_min(attention_features(E, e, weights.W_Q, weights.W_K))
    out = dict(T=int(e.shape[0]), rank_Z=rank, rank_tol=tol, sigma_min_Z=smin, bound=weights.bound,
               bound_name=weights.bound_name, c=float(weights.c_.max(initial=0.0)))
    if y.ndim == 1 and np.issubdtype(y.dtype, np.integer):
        out["accuracy"] = float((y_hat.argmax(axis=1) == y).mean())
        target = class_logits(weights, y)
    else:
        target = y.reshape(y_hat.shape[0], -1)
    out["max_abs_error"] = float(np.abs(y_hat - target).max())
    return out


# --- Step 1: Proposition 1 -----------------------------------------------------------

def _step1(E: np.ndarray, e: np.ndarray, H: int, d_h: int, r: int, c: float | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[tuple[int, ...], ...]]:
    """Heads one at a time; head h is responsible for blocks[h] (r, then r - 1 examples)."""
    T, d = e.shape
    blocks = _blocks(T, H, r)
    W_Q, W_K = np.zeros((H, d, d_h)), np.zeros((H, d, d_h))
    c_, c_req = np.zeros(H), np.zeros(H)
    feats = []  # z_h^(t) of the finished heads, (T, d) each: a new head leaves them unchanged
    for h, fresh in enumerate(blocks):
        if not fresh:
            continue  # more heads than needed: W_K W_Q^T = 0, uniform attention
        fresh = np.array(fresh)
        if h == 0:  # base of the induction: Claim 1 on examples 1..r
            W = _claim1(E, e, fresh, rng)
        else:
            W, c_[h], c_req[h] = _new_head(E, e, fresh, np.concatenate(feats, axis=1), c, rng)
        W_K[h], W_Q[h] = _factor(W, d_h)
        feats.append(attention_features(E, e, W_Q[h:h + 1], W_K[h:h + 1]))
    return W_Q, W_K, c_, c_req, tuple(tuple(int(t) for t in b) for b in blocks)


def _claim1(E: np.ndarray, e: np.ndarray, F: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """W* (d x d, rank <= m) with E^(t) W* e^(t) = alpha_*^(t) for the m examples F.

    Claim 1 (App. B.1): beta^(t) := E^(t)+ alpha_*^(t) gives E^(t) beta^(t) = alpha_*^(t)
    (E^(t) has a right inverse by Assumption 2; otherwise alpha_* is drawn in its range);
    W* [e^(t_1) ... e^(t_m)] = [beta^(t_1) ... beta^(t_m)] is solved by W* = B Q^+, as
    Q = [e^(t_1) ... e^(t_m)] has full column rank (Assumption 1, m <= r <= Q). QED
    """
    Q = e[F].T  # (d, m)
    if np.linalg.matrix_rank(Q) < len(F):
        raise _SubsetFailure(f"queries {F[0]}..{F[-1]} are linearly dependent")
    EF = _contexts(E, F)  # (m, n, d)
    pinvs = np.linalg.pinv(EF)  # E^(t)+: (m, d, n)
    g = LOGIT_SCALE * rng.standard_normal((len(F), EF.shape[1]))
    alpha = np.einsum("tnd,tdk,tk->tn", EF, pinvs, g)  # E E^+ g: g itself when rank E = n
    B = np.einsum("tdn,tn->dt", pinvs, alpha)  # columns beta^(t): (d, m)
    return B @ np.linalg.pinv(Q)  # (d, m) @ (m, d)


def _new_head(E: np.ndarray, e: np.ndarray, F: Sequence[int], Z_prev: np.ndarray, c: float | None, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    """Induction step (App. B, Claim 2): W = W* + c W+ for the fresh examples F.

    Rows 1..T' (T' = F[0]) are old. With C = Z'_b Z'_a^+, subtracting C times the old rows
    leaves [R | Z''_b - C Z''_a] in the fresh rows, R = Z'_b - C Z'_a orthogonal to the
    row space of Z'_a; since Z'_a has full row rank, rank Z = T' + rank [R | M] >= T' +
    rank M, M = Z''_b + A, A = -C Z''_a. (The paper has R = 0: it picks the fresh examples among
    the rows dependent on the old ones. The fixed blocks here give R = 0 for a shared context only.)
    As c -> oo, Z''_a -> Z_a,+ (one-hot picks, Lemma 4) while Z''_b is unchanged (W+
    vanishes on F), so rank M_+ = |F| for generic theta_* suffices, and App. B.2 shows
    ||theta_c - theta_+||_1 <= delta := sigma_min(M_+) / (sqrt(T') e_max ||C||_2) keeps
    it (Weyl, Lemma 5). 1 - theta_c[i*] <= (n-1) exp(spread* - c gap) turns delta into
    c >= (spread* + log(2 (n-1) / delta)) / gap for every old example. QED
    """
    old = np.arange(F[0])
    W_star = _claim1(E, e, F, rng)
    W_plus, alpha_plus = _lemma3(E, e, old, F, rng)
    Za1, Zb1 = Z_prev[old], Z_prev[F]  # Z' of the earlier heads: (T', h d), (|F|, h d)
    C = _right_divide(Zb1, Za1)  # Zb1 Za1^+: (|F|, T')
    Eo, EF = _contexts(E, old), _contexts(E, F)
    top = alpha_plus.argmax(axis=1)
    Za_plus = Eo[np.arange(len(old)), top]  # E^(t)T theta_+^(t): the selected tokens (T', d)
    theta_star = softmax(np.einsum("tnd,de,te->tn", EF, W_star, e[F], optimize=True))
    M_plus = np.einsum("tn,tnd->td", theta_star, EF) - C @ Za_plus
    s_min = np.linalg.svd(M_plus, compute_uv=False)[-1]
    e_max = np.linalg.norm(Eo, axis=-1).max()
    c_norm = np.linalg.norm(C, 2)
    delta = 0.5 * s_min / (np.sqrt(len(old)) * e_max * c_norm) if c_norm > 0 else 1.0
    alpha_star = np.einsum("tnd,de,te->tn", Eo, W_star, e[old], optimize=True)
    spread = alpha_star.max(axis=1) - alpha_star[np.arange(len(old)), top]
    part = np.sort(alpha_plus, axis=1)
    gap = part[:, -1] - part[:, -2]
    n = Eo.shape[1]
    c_required = float(((spread + np.log(2 * (n - 1) / delta)) / gap).max())
    if c is not None:
        return W_star + float(c) * W_plus, float(c), c_required
    Zb = M_plus + C @ Za_plus  # Z''_b: the fresh rows under this head (W+ vanishes on F)
    c_h = _smallest_valid_c(c_required, alpha_star, alpha_plus, Eo, Zb, C, s_min)
    return W_star + c_h * W_plus, c_h, c_required


def _smallest_valid_c(c_required: float, alpha_star: np.ndarray, alpha_plus: np.ndarray, Eo: np.ndarray, Zb: np.ndarray, C: np.ndarray, s_min: float, *, steps: int = 12) -> float:
    """The smallest c in c_required * 10^-k (k = 0..steps) for which the Weyl step of App. B.2
    holds as measured: sigma_min(M_c) >= sigma_min(M_+) / 2, M_c = Z''_b - C Z''_a(c).

    App. B.2 bounds ||theta_c - theta_+||_1 to reach that conclusion, which makes c_required
    loose by orders of magnitude (about 1e7 at H = 20, d = 64, n = 32). Any c for which the
    conclusion itself holds is an equally valid witness for rank M = |F|, and a smaller c
    keeps the logits c E W+ e, whose rounding the forward pass amplifies by ||W_V||, small:
    at H = 20 the max error falls from ~1e-7 to ~1e-12. c_required itself always passes the
    check up to rounding; the scan stops at the first c that fails.
    """
    best = c_required
    for k in range(steps + 1):
        c_k = c_required * 10.0 ** (-k)
        theta = softmax(alpha_star + c_k * alpha_plus)  # E (W* + c W+) e on the old examples: (T', n)
        Za = np.einsum("tn,tnd->td", theta, Eo)  # Z''_a(c): (T', d)
        if np.linalg.svd(Zb - C @ Za, compute_uv=False)[-1] < 0.5 * s_min:
            break
        best = c_k
    return best


def _lemma3(E: np.ndarray, e: np.ndarray, old: Sequence[int], F: Sequence[int], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rank-one W+ = c w^T with E^(t) W+ e^(t) = 0 on F and distinct entries on old (Lemma 3).

    w is a random direction orthogonal to the fresh queries, so w^T e^(t) = 0 on F and
    w^T e^(t) != 0 for every old query outside span{e^(t) : t in F} (Kruskal rank
    >= |F| + 1); E^(t) c has distinct entries when the tokens of E^(t) are distinct. QED
    Returns W+ (||W+||_2 = 1) and alpha_+ = E^(t) W+ e^(t) on the old examples (T', n).
    """
    Qf, _ = np.linalg.qr(e[F].T)  # orthonormal basis of the fresh queries' span: (d, m)
    eo = e[old]
    outside = np.linalg.norm(eo - (eo @ Qf) @ Qf.T, axis=1) / np.linalg.norm(eo, axis=1)
    if outside.min() < 1e-10:
        t = int(old[outside.argmin()])
        raise _SubsetFailure(f"query {t} lies in the span of queries {F[0]}..{F[-1]}")
    g = rng.standard_normal(e.shape[1])
    w = g - Qf @ (Qf.T @ g)
    w /= np.linalg.norm(w)
    cvec = rng.standard_normal(e.shape[1])
    cvec /= np.linalg.norm(cvec)
    alpha_plus = (_contexts(E, old) @ cvec) * (eo @ w)[:, None]  # (T', n)
    part = np.sort(alpha_plus, axis=1)
    if part.shape[1] > 1 and ((part[:, -1] - part[:, -2]) <= 1e-12 * np.abs(part).max()).any():
        raise ConfigError("a context has two equal tokens (or a tie Lemma 3 cannot break): "
                          "make the tokens of every context distinct")
    return np.outer(cvec, w), alpha_plus


def _factor(W: np.ndarray, d_h: int) -> tuple[np.ndarray, np.ndarray]:
    """W_K, W_Q (d x d_h) with W_K W_Q^T = W when rank W <= d_h (truncated SVD)."""
    d = W.shape[0]
    U, s, Vt = np.linalg.svd(W)
    k = min(d, d_h)
    root = np.sqrt(s[:k])
    W_K, W_Q = np.zeros((d, d_h)), np.zeros((d, d_h))
    W_K[:, :k], W_Q[:, :k] = U[:, :k] * root, Vt[:k].T * root
    return W_K, W_Q


# --- Step 2 and the bookkeeping --------------------------------------------------------

def _step2(solve: Callable[[np.ndarray], np.ndarray], targets: np.ndarray, H: int, d: int, d_v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z W_V = [y | 0] (minimum norm, exact as Z has full row rank; solve(B) = Z^+ B);
    W_O = [I_{d_v x d}; ...];
    W_D = I_{d x d_out}. Then Z diag(W_V,h) W_O W_D = (Z W_V)[:, :d_out] = y (eq. (8))."""
    T, d_out = targets.shape
    rhs = np.zeros((T, d_v))
    rhs[:, :d_out] = targets
    W_V = solve(rhs).reshape(H, d, d_v)  # (H d, d_v) -> (H, d, d_v)
    W_O = np.tile(np.eye(d_v, d), (H, 1))  # (H d_v, d)
    return W_V, W_O, np.eye(d, d_out)


def _refine(E: np.ndarray, e: np.ndarray, Y: np.ndarray, solve: Callable[[np.ndarray], np.ndarray], W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray, W_O: np.ndarray, W_D: np.ndarray, skip: bool, *, rounds: int = 3) -> np.ndarray:
    """Iterative refinement of step 2 against the forward pass itself (eqs. (1)-(6)).

    y_hat is linear in W_V: y_hat = Z_f W_V[:, :d_out] with Z_f the forward's own features,
    which differ from Z by the rounding of the logits (|alpha| ~ c ||E|| ||e||). With
    residual r = y - y_hat, delta = Z^+ r (solve) and W_V += delta contracts the error by
    ||(Z_f - Z) Z^+|| << 1 per round (from ~1e-8 to ~1e-13 at H = 20)."""
    H, d, d_v = W_V.shape
    d_out = Y.shape[1]
    for _ in range(rounds):
        r = Y - memorization_forward(E, e, W_Q, W_K, W_V, W_O, W_D, skip=skip)  # (T, d_out)
        if np.abs(r).max() <= 64 * np.finfo(np.float64).eps * max(1.0, np.abs(Y).max()):
            break
        rhs = np.zeros((Y.shape[0], d_v))
        rhs[:, :d_out] = r
        W_V = W_V + solve(rhs).reshape(H, d, d_v)
    return W_V


def _min_norm_solver(A: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """B -> A^+ B for A (p x q) of full row rank p <= q, factored once: A^T = Q R (thin QR)
    gives A^+ = Q R^-T. About 10x cheaper than an SVD-based pinv at p ~ 600, q ~ 1300; the
    SVD is used when R is numerically singular (A not of full row rank)."""
    Q, R = np.linalg.qr(A.T)  # A^T: (q, p) = Q (q, p) R (p, p)
    diag = np.abs(np.diag(R))
    if diag.size and diag.min() <= diag.max() * max(A.shape) * np.finfo(np.float64).eps:
        P = np.linalg.pinv(A)  # (q, p)
        return lambda B: P @ B
    return lambda B: Q @ solve_triangular(R, B, trans="T")


def _right_divide(B: np.ndarray, A: np.ndarray) -> np.ndarray:
    """B A^+ for A (p x q) of full row rank: (A^+)^T B^T = R^-1 Q^T B^T, transposed back."""
    Q, R = np.linalg.qr(A.T)
    diag = np.abs(np.diag(R))
    if diag.size and diag.min() <= diag.max() * max(A.shape) * np.finfo(np.float64).eps:
        return B @ np.linalg.pinv(A)
    return solve_triangular(R, Q.T @ B.T).T


def _capacity(E: np.ndarray, e: np.ndarray, d_h: int) -> tuple[int, str, list[str]]:
    """r of Theorem 1, or of Remark 1 when an assumption visibly fails.

    Q (the queries' Kruskal rank) is at most rank [e^(1) ... e^(T)]; subsets that the
    construction uses are checked as it goes (_SubsetFailure lowers r further). A
    context of rank k < n confines its z rows to k dimensions; r <= k is our extension
    of Remark 1 to Assumption 2.
    """
    n = E.shape[-2]
    notes, r = [], min(n, d_h)
    k = int(context_ranks(E).min())
    q = int(np.linalg.matrix_rank(e))
    if k < n:
        notes.append(f"Assumption 2 fails: a context has rank {k} < n = {n}")
    if q < min(n, len(e)):  # T < n queries cannot have Kruskal rank n; App. B pads with dummies
        notes.append(f"Assumption 1 fails: the queries span {q} < n = {n} dimensions (Kruskal rank Q <= {q})")
    else:
        q = n
    r_used = max(1, min(r, k, q))
    return r_used, ("Theorem 1" if r_used == r else "Remark 1"), notes


def _blocks(T: int, H: int, r: int) -> list[list[int]]:
    """Head 1: examples 0..r-1; head h >= 2: the next r - 1 (empty once T runs out)."""
    out, start = [], 0
    for h in range(H):
        size = r if h == 0 else r - 1
        out.append(list(range(start, min(start + size, T))))
        start = min(start + size, T)
    return out


def _contexts(E: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """E^(t) for t in idx: (len(idx), n, d), broadcasting a shared context."""
    return E[idx] if E.ndim == 3 else np.broadcast_to(E, (len(idx), *E.shape))


def _prepare(E: np.ndarray, e: np.ndarray, y: np.ndarray, n_classes: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    E, e, y = np.asarray(E, np.float64), np.asarray(e, np.float64), np.asarray(y)
    if e.ndim != 2 or E.ndim not in (2, 3) or E.shape[-1] != e.shape[1] or (E.ndim == 3 and len(E) != len(e)):
        raise ConfigError(f"give e as (T, d) and E as (n, d) or (T, n, d); got e {e.shape}, E {E.shape}")
    codes = None
    if y.ndim == 1 and np.issubdtype(y.dtype, np.integer):
        k = int(y.max()) + 1 if n_classes is None else n_classes
        if y.min() < 0 or y.max() >= k:
            raise ConfigError(f"class labels must lie in 0..{k - 1}, got {y.min()}..{y.max()}")
        if k <= e.shape[1]:
            Y = np.eye(k)[y]
        else:
            codes = _class_codes(k, e.shape[1])
            Y = codes[y]
    else:
        Y = np.asarray(y, np.float64).reshape(len(y), -1)
    if len(Y) != len(e):
        raise ConfigError(f"y has {len(Y)} labels for {len(e)} examples: give one label per query")
    if not (np.isfinite(E).all() and np.isfinite(e).all() and np.isfinite(Y).all()):
        raise ConfigError("E, e and y must be finite")
    return E, e, Y, codes


def _class_codes(k: int, d: int) -> np.ndarray:
    """k > d classes as the codes u = +-s_i (k x m, m = ceil(k / 2) <= d): memorizing the
    real label u_y (d_out = m) and W_D = I_(d x m) U^T gives logits u_j^T u_y = 1 for j = y,
    -1 for its sign twin and 0 otherwise, so the argmax is y with margin 1."""
    m = -(-k // 2)
    if m > d:
        raise ConfigError(f"{k} classes need {m} code dimensions > d = {d}: use at most {2 * d} classes")
    codes = np.zeros((k, m))
    codes[np.arange(k), np.arange(k) // 2] = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    return codes


def class_logits(weights: MemorizingWeights, y: np.ndarray) -> np.ndarray:
    """The logits the weights are built to output for class labels y: one-hot rows, or
    U u_y with the +-s_i class codes when there are more classes than d."""
    if weights.class_codes is None:
        return np.eye(weights.W_D.shape[1])[y]
    return weights.class_codes[y] @ weights.class_codes.T


def _validate(*, H: int, d_h: int, d_v: int, d_out: int, n: int, d: int, c: float | None) -> None:
    for name, v in dict(H=H, d_h=d_h, d_v=d_v).items():
        check_int(name, int(v) if isinstance(v, np.integer) else v, 1)
    if d_v < d_out:
        raise ConfigError(f"Theorem 1 needs d_v >= d_out; got d_v = {d_v} < d_out = {d_out}: raise d_v")
    if d_out > d:
        raise ConfigError(f"W_D = I_(d x d_out) needs d_out <= d; got d_out = {d_out} > d = {d}")
    if n >= d:
        raise ConfigError(f"Theorem 1 needs context size n < d; got n = {n}, d = {d}: shorten the context")
    if c is not None:  # None: App. B.2's value, scanned down (_smallest_valid_c)
        check_number("c", c, 0, open_min=True)


# --- `attnlab construct memorization` ------------------------------------------------

@dataclass(frozen=True)
class MemorizationParams(Config):
    """Parameters of ``attnlab construct memorization`` (Theorem 1 on data drawn as in §5.2)."""

    H: int = param(4, "number of heads H")
    n: int = param(32, "context size n (n < d)")
    d: int = param(64, "embedding dimension d")
    d_h: int = param(64, "key/query dimension d_h")
    T: int | None = param(None, "examples (default: the bound H(min(n, d_h) - 1) + 1)")
    d_out: int = param(1, "label dimension d_out")
    seed: int = param(0, "seed for the data and the construction's random draws")
    shared: bool = param(True, "one context E for all examples (true) or one per example (false)")

    def validate(self) -> None:
        for name in ("H", "n", "d", "d_h", "d_out"):
            check_int(name, getattr(self, name), minimum=1)
        if self.T is not None:
            check_int("T", self.T, minimum=1)
        check_seed(self.seed)
        check_bool("shared", self.shared)


MAX_ERROR = 1e-8  # the construction's check: max |y_hat - y| over the data it was built for
THEOREM1, REMARK1 = "memorization.theorem-1", "memorization.remark-1"  # the ledger entries a build realises
EINSUM_SLOWDOWN = 12  # numpy's einsum without optimize= (C loops, no BLAS) against a BLAS product, measured
BASE_BYTES = 16 * 2 ** 20  # what any build holds beside its arrays (torch's forward, LAPACK's buffers), measured
CALLS_PER_HEAD = 100  # small calls per head (pinv's per-example SVDs, the scan of c, norms, softmaxes), profiled


def examples(p: MemorizationParams) -> int:
    """T of the build: p.T, or Theorem 1's bound H (min(n, d_h) - 1) + 1."""
    return memorization_bound(p.H, min(p.n, p.d_h)) if p.T is None else p.T


SUM_POINTS = 4096  # heads summed one by one; beyond, a sum over heads is sampled


def _sum_over_heads(k: int, term: Callable[[int], float]) -> float:
    """sum_{i < k} term(i): exactly for k <= SUM_POINTS, else k times the mean of ``term`` at
    SUM_POINTS evenly spaced i (the terms are low-degree polynomials in i, so the sample's error
    is far below the estimate's own), so that an estimate for a million heads takes no longer
    than one for four thousand."""
    if k <= SUM_POINTS:
        return float(sum(term(i) for i in range(k)))
    return k * sum(term((2 * j + 1) * k // (2 * SUM_POINTS)) for j in range(SUM_POINTS)) / SUM_POINTS


def build_estimate(T: int, n: int, d: int, d_h: int, d_out: int, H: int, *, shared: bool) -> Estimate:
    """Peak memory and work of :func:`memorize_drawn_dataset` (build and check) for T examples.

    With r = min(n, d_h) and T'_h = min(r + (h - 1)(r - 1), T) the examples before head h + 1,
    float64 (8 bytes):

    memory  BASE_BYTES + 8 (T d + T d_out + (n d shared | T n d per example))        the data
            + 8 * 8 T H d: Z (T x H d, eq. (7)) and its QR, or at the last head of step 1 the
              finished heads' features, their concatenation, Z'_a and its QR (6 to 8 copies)
            + 8 H T n d_h with one context per example: E^(t) W_K,h for every head at once
    lapack  sum_{h=1}^{H-1} qr_flops(h d, T'_h, q=True)   step 1: Z'_a^+ per head (_right_divide)
            + qr_flops(H d, T, q=True)                     step 2: Z^+ (_min_norm_solver)
            + 2 svd_flops(T, H d)                          rank and sigma_min of Z, built and checked
            + 13 H svd_flops(r - 1, d)                     the scan of c per head (_smallest_valid_c)
    gemm    sum_h 2 T'_h d (d + n) + 2 T'_h h d (r - 1)   logits of the old examples; C = Z'_b Z'_a^+
            + EINSUM_SLOWDOWN (13 sum_h 2 T'_h n d         z rows of the scan of c
                               + [per example] 3 * 2 H T n d d_h)  E^(t) W_K,h (step 1, Z twice)
    calls   CALLS_PER_HEAD H + 100                          what dominates below H ~ 10

    Measured against this estimate (one BLAS thread, n = 32, d = d_h = 64): peak memory within
    1.5x for H = 4..40 shared and per example; time within 2x for H >= 10 (below, fixed costs
    of ~0.1 s dominate).
    """
    r = min(n, d_h)
    # heads h = 1, 2, ... with examples of their own: T'_h = r + (h - 1)(r - 1) < T
    own = (H - 1 if T > 1 else 0) if r == 1 else min(H - 1, max(0, -(-(T - r) // (r - 1))))

    def start(i: int) -> int:  # T'_h of head h = i + 1
        return r + i * (r - 1)

    m = H * d
    data = T * d + T * d_out + (n * d if shared else T * n * d)
    peak = BASE_BYTES + 8 * (data + 8 * T * m + (0 if shared else H * T * n * d_h))
    lapack = (_sum_over_heads(own, lambda i: qr_flops((i + 1) * d, start(i), q=True)) + qr_flops(m, T, q=True)
              + 2 * svd_flops(T, m) + 13 * H * svd_flops(r - 1, d))
    gemm = _sum_over_heads(own, lambda i: matmul_flops(d, d, start(i)) + 2.0 * start(i) * n * d
                           + matmul_flops(r - 1, (i + 1) * d, start(i)))
    slow = (13 * _sum_over_heads(own, lambda i: 2.0 * start(i) * n * d)
            + (0 if shared else 3 * 2.0 * H * T * n * d * d_h))
    what = (f"Z ({T} x {m} float64) and its QR" if shared else
            f"Z ({T} x {m}) and E W_K ({H} x {T} x {n} x {d_h}), float64")
    return Estimate(peak, what, gemm=gemm + EINSUM_SLOWDOWN * slow, lapack=lapack, calls=CALLS_PER_HEAD * H + 100,
                    lower=("H", "T"))


def construction_anchor(weights: MemorizingWeights) -> dict:
    """The statement a build realises, where the text's hypotheses hold for its data.

    Theorem 1 when Assumptions 1 and 2 hold (the build's bound is Theorem 1's, no note); Remark 1
    when only Assumption 1 fails (the queries' Kruskal rank Q < n lowers r to min(Q, d_h)); none
    where a context has rank below n: r <= rank E^(t) is attnlab's extension of Remark 1 to
    Assumption 2, not the text's, and the check is then a sanity check of attnlab's code."""
    if any(note.startswith("Assumption 2 fails") for note in weights.notes):
        return {}
    if weights.bound_name == "Theorem 1" and not weights.notes:
        return dict(anchor=THEOREM1, falsifier="the proof's weights leave max |y_hat - y| > 1e-8 on T <= H(r-1)+1 "
                                               "examples satisfying Assumptions 1 and 2")
    return dict(anchor=REMARK1, falsifier="the weights leave max |y_hat - y| > 1e-8 on T <= H(min(Q, d_h)-1)+1 "
                                          "examples whose queries have Kruskal rank Q < n")


def estimate_memorization(p: MemorizationParams) -> Estimate:
    """:func:`build_estimate` for the parameters (T = Theorem 1's bound unless given)."""
    return build_estimate(examples(p), p.n, p.d, p.d_h, p.d_out, p.H, shared=p.shared)


def construct_memorization(p: MemorizationParams) -> ConstructionResult:
    """Theorem 1's weights for T examples (default: the bound H(min(n, d_h) - 1) + 1) drawn
    as in §5.2 (U(0,1) tokens and queries, N(0,1) labels), checked in float64.

    The .npz holds E ((n, d) shared or (T, n, d)), e (T, d), y (T, d_out), W_Q, W_K
    (H, d, d_h), W_V (H, d, d_v), W_O (H d_v, d), W_D (d, d_out): y_hat per eqs. (1)-(6).
    Its memory and time: :func:`estimate_memorization`; parameters whose build needs more memory than
    the machine has are refused before anything is allocated (here and by ``attnlab construct``).
    """
    require_fits(estimate_memorization(p), f"construct_memorization H={p.H}", change="lower H")
    T = examples(p)
    (E, e, y), weights, checked = memorize_drawn_dataset(T, p.n, p.d, p.d_out, H=p.H, d_h=p.d_h, shared=p.shared,
                                                         seed=p.seed)
    values = {**checked, "H": p.H, "n": p.n, "d": p.d, "d_h": p.d_h, "d_out": p.d_out, "seed": p.seed,
              "shared_context": p.shared}
    check = at_most(checked["max_abs_error"], MAX_ERROR, f"T = {T} examples, float64", quantity="max |y_hat - y|",
                    role="construction",
                    where="Theorem 1 (§4), proof in App. B" if weights.bound_name == "Theorem 1" else "Remark 1 (§4.1)",
                    **construction_anchor(weights))
    return ConstructionResult(arrays=dict(E=E, e=e, y=y, **weights.matrices()), values=values, check=check,
                              notes=list(weights.notes))


register_construction(Construction(
    "memorization", "memorization",
    "Theorem 1: weights of one multi-head attention layer that memorize T = H(min(n, d_h) - 1) + 1 labels",
    MemorizationParams, construct_memorization,
    flag_aliases={"shared-context": ("shared", True), "per-example": ("shared", False)},
    estimate=estimate_memorization, anchors=(THEOREM1, REMARK1)))
