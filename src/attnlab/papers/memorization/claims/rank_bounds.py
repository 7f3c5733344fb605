"""Claims of memorization-capacity-of-mha on upper bounds of rank Z and on the assumptions:
Proposition 2 (§4.2, App. E), Proposition 5 (App. I) and Proposition 4 (§4.4, App. G).

An upper bound "for ANY weights" cannot be checked by one draw, so each bound is attacked:
random W_K, W_Q at logit scales 0.1 to 100, then gradient ascent (Adam, float64) on the smooth
rank surrogate  log det(Z Z^T / ||Z||_F^2 + eps I)  (a sum of log squared singular values,
floored at eps), which pushes every singular value of Z up. The largest rank ever seen is
compared with the bound; rank counts singular values > RANK_RTOL * sigma_1.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.analysis.kruskal import assumption2_holds, assumption3_holds, assumption3_vectors, kruskal_rank
from attnlab.registry import Measurement, at_least, at_most, claim
from attnlab.papers.memorization.model import memorization_forward

RANK_RTOL = 1e-10  # singular values <= RANK_RTOL * sigma_1 count as zero
SCALES = (0.1, 1.0, 10.0, 100.0)  # logit scale multipliers of the random draws
DRAWS_PER_SCALE = 6
ASCENT_STARTS, ASCENT_STEPS, ASCENT_LR, SURROGATE_EPS = 3, 40, 0.05, 1e-8


def _features(E: torch.Tensor, e: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor) -> torch.Tensor:
    """Z (T x H d) of eq. (7) in torch (differentiable); E (n, d) shared or (T, n, d)."""
    q = torch.einsum("td,hdk->htk", e, W_Q)  # W_Q,h^T e^(t): (H, T, d_h)
    if E.ndim == 2:
        alpha = torch.einsum("htk,hnk->htn", q, torch.einsum("nd,hdk->hnk", E, W_K))  # eq. (1): (H, T, n)
        z = torch.softmax(alpha, dim=-1) @ E  # eqs. (2)-(3): (H, T, d)
    else:
        alpha = torch.einsum("htk,htnk->htn", q, torch.einsum("tnd,hdk->htnk", E, W_K))  # (H, T, n)
        z = torch.einsum("htn,tnd->htd", torch.softmax(alpha, dim=-1), E)  # (H, T, d)
    return z.transpose(0, 1).reshape(e.shape[0], -1)  # eq. (7): (T, H, d) -> (T, H d)


def _spectrum(Z: torch.Tensor) -> np.ndarray:
    """Singular values of Z divided by sigma_1 (descending)."""
    s = torch.linalg.svdvals(Z.detach()).numpy()
    return s / s[0]


def _surrogate(Z: torch.Tensor) -> torch.Tensor:
    """log det(Z Z^T / ||Z||_F^2 + eps I) = sum_i log(sigma_i^2 / ||Z||_F^2 + eps) (T terms)."""
    G = Z @ Z.T / (Z * Z).sum()  # (T, T)
    return torch.logdet(G + SURROGATE_EPS * torch.eye(G.shape[0], dtype=G.dtype))


def adversarial_rank_search(E: np.ndarray, e: np.ndarray, H: int, d_h: int, bound: int, seed: int) -> dict:
    """Largest rank Z found over random draws and gradient ascent, and the largest
    sigma_{bound+1} / sigma_1 seen (how close any attempt came to breaking the bound).

    Runs on one torch thread (restored afterwards): the matrices are ~12 x 21, and on a busy
    machine intra-op threads made the search ~100x slower (43 s instead of 0.4 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _search(E, e, H, d_h, bound, seed)
    finally:
        torch.set_num_threads(threads)


def _search(E: np.ndarray, e: np.ndarray, H: int, d_h: int, bound: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    E_t, e_t = torch.as_tensor(E, dtype=torch.float64), torch.as_tensor(e, dtype=torch.float64)
    d = e.shape[1]
    best = {"max_rank": 0, "max_ratio_above_bound": 0.0, "attempts": 0}

    def record(W_Q, W_K):
        s = _spectrum(_features(E_t, e_t, W_Q, W_K))
        best["max_rank"] = max(best["max_rank"], int((s > RANK_RTOL).sum()))
        if s.size > bound:
            best["max_ratio_above_bound"] = max(best["max_ratio_above_bound"], float(s[bound]))
        best["attempts"] += 1

    def draw(scale):  # W ~ N(0, 1/d): logits O(1) at scale 1, times ``scale``
        W_K = torch.randn(H, d, d_h, generator=g, dtype=torch.float64) / d ** 0.5
        W_Q = torch.randn(H, d, d_h, generator=g, dtype=torch.float64) * scale / d ** 0.5
        return W_Q, W_K

    for scale in SCALES:
        for _ in range(DRAWS_PER_SCALE):
            record(*draw(scale))
    for _ in range(ASCENT_STARTS):
        W_Q, W_K = (w.requires_grad_() for w in draw(1.0))
        opt = torch.optim.Adam([W_Q, W_K], lr=ASCENT_LR)
        for _ in range(ASCENT_STEPS):
            opt.zero_grad()
            (-_surrogate(_features(E_t, e_t, W_Q, W_K))).backward()
            opt.step()
            record(W_Q.detach(), W_K.detach())
    return best


def _uniform(shape, rng) -> np.ndarray:
    return rng.uniform(size=shape)


def _bound_measurement(found: dict, control: dict, bound: int, sizes: str, control_name: str) -> Measurement:
    return at_most(
        found["max_rank"] - bound, 0,
        f"max rank Z found - bound; {sizes}; bound {bound}, max rank {found['max_rank']} over "
        f"{found['attempts']} weight sets (random at logit scales {SCALES} + Adam ascent on log det), "
        f"max sigma_(bound+1)/sigma_1 {found['max_ratio_above_bound']:.1e}; rank counts sigma > "
        f"{RANK_RTOL:g} sigma_1; control ({control_name}): max rank {control['max_rank']}")


@claim(
    "memorization.proposition2-shared-upper",
    where="§4.2, Proposition 2 (proof: App. E)",
    statement="with a shared context, rank Z <= H(n-1)+1 for ANY W_K, W_Q (adversarial search)",
    paper_value="rank Z <= H(n-1)+1 (tight with Proposition 1)",
)
def _proposition2(seed: int) -> Measurement:
    H, n, d, d_h, T = 3, 3, 7, 7, 12  # bound 7 < H n = 9 < H d = 21
    rng = np.random.default_rng(seed)
    E, e = _uniform((n, d), rng), _uniform((T, d), rng)
    bound = H * (n - 1) + 1
    found = adversarial_rank_search(E, e, H, d_h, bound, seed)
    control = adversarial_rank_search(_uniform((T, n, d), rng), e, H, d_h, bound, seed)
    return _bound_measurement(found, control, bound, f"H={H} n={n} d={d} d_h={d_h} T={T}, U(0,1) tokens",
                              "per-example contexts, the bound need not hold")


@claim(
    "memorization.proposition5-constant-rowsum",
    where="App. I, Proposition 5",
    statement="if every context token has 1^T e_i = C, rank Z <= H(d-1)+1 for ANY W_K, W_Q (adversarial search)",
    paper_value="rank Z <= H(d-1)+1",
)
def _proposition5(seed: int) -> Measurement:
    H, n, d, T, C = 2, 3, 4, 12, 1.0  # per-example contexts; bound 7 < H d = 8
    rng = np.random.default_rng(seed)
    raw = _uniform((T, n, d), rng)
    E = raw - (raw.sum(axis=-1, keepdims=True) - C) / d  # each token's entries sum to C
    e = _uniform((T, d), rng)
    bound = H * (d - 1) + 1
    found = adversarial_rank_search(E, e, H, d, bound, seed)
    control = adversarial_rank_search(raw, e, H, d, bound, seed)
    return _bound_measurement(found, control, bound, f"H={H} n={n} d=d_h={d} T={T}, C={C}, max |1^T e_i - C| "
                              f"{np.abs(E.sum(-1) - C).max():.1e}", "the same tokens before the row-sum shift")


def skip_layer_outputs(E: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E', e') after the layer A_0 of Proposition 4: one head, W_K = W_Q = 0, W_V = W_O = I,
    skip connection, run through memorization_forward with W_D = I. E (T, n, d), e (T, d)."""
    T, n, d = E.shape
    W = dict(W_Q=np.zeros((1, d, 1)), W_K=np.zeros((1, d, 1)), W_V=np.eye(d)[None], W_O=np.eye(d), W_D=np.eye(d))
    e_out = memorization_forward(E, e, **W, skip=True)  # e + mean_i e_i: (T, d)
    E_rep = np.repeat(E, n, axis=0)  # context of each token as a query: (T n, n, d)
    E_out = memorization_forward(E_rep, E.reshape(T * n, d), **W, skip=True).reshape(T, n, d)
    return E_out, e_out


@claim(
    "memorization.proposition4-skip",
    where="§4.4, Proposition 4 (proof: App. G)",
    statement="one layer with W_K = W_Q = 0, W_V = W_O = I and a skip connection turns Assumptions 2+3 "
              "into Assumptions 2+1",
    paper_value="Assumption 1 holds after the layer (Table 1: fails at the embedding, holds after attention)",
)
def _proposition4(seed: int) -> Measurement:
    T, n, d = 9, 3, 7
    rng = np.random.default_rng(seed)
    cls = rng.standard_normal(d)  # the shared [CLS] query, also the first context token (self-attention)
    E = rng.uniform(size=(T, n, d))
    E[:, 0] = cls
    e = np.tile(cls, (T, 1))  # (T, d): Kruskal rank 1, Assumption 1 fails
    E_out, e_out = skip_layer_outputs(E, e)
    before, after = kruskal_rank(e), kruskal_rank(e_out)
    ctx_rank = int(min(np.linalg.matrix_rank(E_out)))
    gap = float(np.abs(e_out - assumption3_vectors(E, e)).max())
    margin = min(after - n, ctx_rank - n)
    return at_least(margin, 0, (
        f"min(Kruskal rank of e' - n, min_t rank E'^(t) - n); T={T} n={n} d={d}, every query the same "
        f"[CLS] vector; Kruskal rank of queries {before} before, {after} after (need {n}); Assumption 2 "
        f"before {assumption2_holds(E)}, after: min rank E' {ctx_rank}; Assumption 3 {assumption3_holds(E, e)}; "
        f"max |e' - e~| {gap:.1e}; Kruskal rank by enumeration, independence at sigma_min > 1e-10 sigma_max"))
