"""Why attention divides its logits by sqrt(d_k): measurements (math text §1.2.3).

For q, k in R^d with i.i.d. N(0, 1) entries, q.k = sum_i q_i k_i is a sum of d
independent terms of mean 0 and variance 1, so

    E[q.k] = 0,   Var(q.k) = d,   Var(q.k / sqrt(d)) = 1.

With each term's fourth moment E[(q_i k_i)^4] = 9, E[(q.k)^4] = 3 d^2 + 6 d, so a
variance estimated from N samples has standard error sqrt((2 d^2 + 6 d) / N),
i.e. a relative standard error sqrt((2 + 6/d) / N) for Var(q.k)/d.

Unscaled logits z = K q therefore grow like sqrt(d); the softmax s = softmax(z)
saturates towards one-hot and its Jacobian J_s = diag(s) - s s^T (eq. 8) goes to
0 (eq. 9): the vanishing gradient the text describes. (The text writes the
factor as 1/sqrt(k); k there is the key dimension d_k, called d here.)

All functions work in the dtype of their inputs; the experiments use float64.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.analysis.softmax_jacobian import softmax_jacobian

_CHUNK_ELEMENTS = 1 << 22  # bounds the memory of one batch of random draws


def dot_products(d: int, n_samples: int, *, generator: torch.Generator,
                 dtype: torch.dtype = torch.float64, device: str = "cpu") -> Tensor:
    """n_samples draws of q.k with q, k ~ N(0, I_d) independent; returns (n_samples,)."""
    rows = max(1, _CHUNK_ELEMENTS // d)
    out = []
    for start in range(0, n_samples, rows):
        m = min(rows, n_samples - start)
        q = torch.randn(m, d, generator=generator, dtype=dtype, device=device)  # (m, d)
        k = torch.randn(m, d, generator=generator, dtype=dtype, device=device)  # (m, d)
        out.append((q * k).sum(-1))  # (m,)
    return torch.cat(out)


def variance_relative_standard_error(d: int, n_samples: int) -> float:
    """Theoretical relative standard error of the sample variance of q.k: sqrt((2 + 6/d)/N)."""
    return math.sqrt((2.0 + 6.0 / d) / n_samples)


def dot_product_variance(dims: list[int], n_samples: int, *, generator: torch.Generator,
                         dtype: torch.dtype = torch.float64, device: str = "cpu") -> dict:
    """Sample variance of q.k and of q.k/sqrt(d) for each d in ``dims``.

    Returns lists aligned with ``dims``: ``var_raw`` (theory d), ``var_scaled``
    (theory 1) and ``rel_se`` (theoretical relative standard error of both).
    """
    var_raw, var_scaled, rel_se = [], [], []
    for d in dims:
        x = dot_products(d, n_samples, generator=generator, dtype=dtype, device=device)
        var_raw.append(x.var().item())
        var_scaled.append((x / math.sqrt(d)).var().item())
        rel_se.append(variance_relative_standard_error(d, n_samples))
    return {"dims": list(dims), "var_raw": var_raw, "var_scaled": var_scaled, "rel_se": rel_se}


def loglog_slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log y against log x (1 for y proportional to x)."""
    lx = torch.log(torch.tensor(x, dtype=torch.float64))
    ly = torch.log(torch.tensor(y, dtype=torch.float64))
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float((lx * ly).sum() / (lx * lx).sum())


def softmax_entropy(z: Tensor) -> Tensor:
    """H(softmax(z)) = -sum_i s_i log s_i over the last axis (0 log 0 = 0); (..., n) -> (...)."""
    s = torch.softmax(z, dim=-1)
    return -torch.special.xlogy(s, s).sum(-1)


def jacobian_frobenius_norm(z: Tensor) -> Tensor:
    """||J_s(z)||_F with J_s = diag(s) - s s^T (eq. 8), accurate when s saturates; (..., n) -> (...)."""
    return torch.linalg.matrix_norm(softmax_jacobian(z))


def gradient_norm_through_softmax(z: Tensor, g: Tensor) -> Tensor:
    """||d(g . softmax(z))/dz|| = ||J_s(z)^T g|| by autograd; z, g (..., n) -> (...).

    ``g`` is the gradient arriving at the softmax output from upstream; the
    result is what back-propagation hands to the logits.
    """
    z = z.detach().requires_grad_(True)
    with torch.enable_grad():
        (torch.softmax(z, dim=-1) * g).sum().backward()
    return z.grad.norm(dim=-1)


def one_hot_limit(z: Tensor, scales: Tensor) -> Tensor:
    """The large-t limit of E||J_s(t z)||_F as s -> one-hot (eq. 9), averaged over rows of z.

    With Delta_k = z_max - z_k for the non-maximal k and s_k ~ e_k = exp(-t Delta_k),
    the entries of J_s = diag(s) - s s^T (eq. 8) are, to leading order,
    J_max,max ~ sum_k e_k, J_max,k = J_k,max ~ -e_k, J_k,k ~ e_k, so

        ||J_s(t z)||_F^2 ~ (sum_k e_k)^2 + 3 sum_k e_k^2        (-> 4 e^{-2 t Delta_min}).

    Using e_k = sigmoid(t Delta_k) sigmoid(-t Delta_k) instead of exp(-t Delta_k)
    (equal to leading order) makes the formula exact for a 2-way softmax, so it
    also holds for near-ties of the top two logits, which dominate the mean at
    large t and make it decay like 1/t. It overshoots at small t (many e_k ~ 1/4).
    z: (m, n) with n >= 2; scales: (S,); returns (S,).
    """
    top = z.max(dim=-1, keepdim=True)
    gaps = top.values - z  # (m, n), 0 at the maximum
    not_max = torch.ones_like(z, dtype=torch.bool).scatter_(-1, top.indices, False)
    out = []
    for t in scales.tolist():
        # sigmoid(-x) rather than 1 - sigmoid(x): no cancellation when saturated
        e = torch.where(not_max, torch.sigmoid(t * gaps) * torch.sigmoid(-t * gaps), torch.zeros_like(z))
        out.append(torch.sqrt(e.sum(-1) ** 2 + 3 * (e * e).sum(-1)).mean())  # (m,) -> ()
    return torch.stack(out)


def saturation_sweep(z: Tensor, g: Tensor, scales: Tensor) -> dict:
    """Softmax statistics of t z for each logit scale t, averaged over the rows of z.

    z: (m, n) logits, g: (m, n) upstream gradients, scales: (S,). Returns lists of
    length S: ``jacobian_norm`` E||J_s(t z)||_F, ``gradient_norm`` E||J_s(t z)^T g||,
    ``max_prob`` E[max_i s_i], ``entropy`` E[H(s)], and ``one_hot_limit`` (see
    :func:`one_hot_limit`). Rows are processed in chunks so J (m, n, n) stays small.
    """
    m, n = z.shape
    rows = max(1, _CHUNK_ELEMENTS // (n * n))
    stats = ("jacobian_norm", "gradient_norm", "max_prob", "entropy")
    out: dict[str, list[float]] = {k: [] for k in stats}
    for t in scales.tolist():
        sums = dict.fromkeys(stats, 0.0)
        for start in range(0, m, rows):
            zt, gc = t * z[start:start + rows], g[start:start + rows]  # (rows, n)
            sums["jacobian_norm"] += jacobian_frobenius_norm(zt).sum().item()
            sums["gradient_norm"] += gradient_norm_through_softmax(zt, gc).sum().item()
            sums["max_prob"] += torch.softmax(zt, dim=-1).max(-1).values.sum().item()
            sums["entropy"] += softmax_entropy(zt).sum().item()
        for k in stats:
            out[k].append(sums[k] / m)
    out["one_hot_limit"] = one_hot_limit(z, scales).tolist()
    return out


def uniform_jacobian_norm(n: int) -> float:
    """||J_s||_F at uniform s = 1/n (the t -> 0 limit): sqrt(n - 1) / n."""
    return math.sqrt(n - 1) / n


def attention_logit_sweep(dims: list[int], n_keys: int, n_samples: int, *,
                          generator: torch.Generator, dtype: torch.dtype = torch.float64,
                          device: str = "cpu") -> dict:
    """Softmax statistics of attention logits z_j = q.k_j, unscaled and divided by sqrt(d).

    For each d: q (m, d) and K (m, n_keys, d) with N(0, 1) entries, m = n_samples,
    a random unit upstream gradient g (m, n_keys). Returns, per d, the means of the
    entropy, the maximal probability, ||J_s||_F and ||J_s^T g|| for both logits
    (keys ``<stat>_raw`` and ``<stat>_scaled``), as lists aligned with ``dims``.
    """
    stats = ("entropy", "max_prob", "jacobian_norm", "gradient_norm")
    out: dict[str, list] = {"dims": list(dims), "n_keys": n_keys}
    out.update({f"{s}_{v}": [] for s in stats for v in ("raw", "scaled")})
    for d in dims:
        sums = {k: 0.0 for k in out if k not in ("dims", "n_keys")}
        rows = max(1, _CHUNK_ELEMENTS // (n_keys * d))
        for start in range(0, n_samples, rows):
            m = min(rows, n_samples - start)
            q = torch.randn(m, d, generator=generator, dtype=dtype, device=device)  # (m, d)
            K = torch.randn(m, n_keys, d, generator=generator, dtype=dtype, device=device)  # (m, n, d)
            g = torch.randn(m, n_keys, generator=generator, dtype=dtype, device=device)  # (m, n)
            g = g / g.norm(dim=-1, keepdim=True)
            z = torch.einsum("mnd,md->mn", K, q)  # (m, n)
            for v, zz in (("raw", z), ("scaled", z / math.sqrt(d))):
                sums[f"entropy_{v}"] += softmax_entropy(zz).sum().item()
                sums[f"max_prob_{v}"] += torch.softmax(zz, -1).max(-1).values.sum().item()
                sums[f"jacobian_norm_{v}"] += jacobian_frobenius_norm(zz).sum().item()
                sums[f"gradient_norm_{v}"] += gradient_norm_through_softmax(zz, g).sum().item()
        for k, total in sums.items():
            out[k].append(total / n_samples)
    return out
