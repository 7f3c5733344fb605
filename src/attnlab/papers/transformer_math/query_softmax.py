"""§1.2.3 query by query: the softmax of one query's attention logits, with and without 1/sqrt(d).

The text's case for the scale is about one softmax: "for large inputs the softmax function is
generating outputs which closely resemble the values in (9)", where its Jacobian
J_s = diag(s) - s s^T (eq. 8) vanishes, and "To tackle the problem of the vanishing gradient is
necessary to rescale the dot products". For one query q and n keys k_j in R^d,

    z_j = q . k_j                     (unscaled)       z_j / sqrt(d)    (scaled)

and each query gets its own ||J_s||, so the statement is judged on the distribution over queries
of the per-query ratio ||J_s(z)||_F / ||J_s(z / sqrt(d))||_F (its median and quantiles). The mean
of the norms is another statistic: it is dominated by the few queries whose two largest unscaled
logits nearly tie, where the unscaled softmax is a 2-way split with ||J|| ~ 1/2 (the text names
no statistic: its statement is about each softmax).

Inputs: q, k_j with i.i.d. entries of mean 0 and variance 1, Gaussian (what attnlab measures) or
uniform on [-sqrt(3), sqrt(3)] (a control with another distribution of the same two moments).
The text states no distribution; its argument (like Vaswani et al.'s footnote 4) needs only
independent entries of mean 0 and variance 1, for which Var(q . k) = d.

With entries of kurtosis kappa = E[x^4] (3 Gaussian, 9/5 uniform), E[(q . k)^4] = d kappa^2 +
3 d (d - 1), so the sample variance of N draws of q . k has relative standard error
sqrt((2 + (kappa^2 - 3) / d) / N) (attnlab.analysis.logit_scaling gives the Gaussian case).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.analysis.logit_scaling import gradient_norm_through_softmax, jacobian_frobenius_norm, softmax_entropy
from attnlab.config import check_choice, check_int

DISTRIBUTIONS = ("gaussian", "uniform")
KURTOSIS = {"gaussian": 3.0, "uniform": 9.0 / 5.0}
"""E[x^4] of each distribution at unit variance."""
CHUNK_ELEMENTS = 1 << 22  # numbers drawn at once: the chunks of attnlab.analysis.logit_scaling, so the same draws
STATISTICS = ("entropy", "max_prob", "jacobian_norm", "gradient_norm")
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def draw(shape: tuple[int, ...], distribution: str, *, generator: torch.Generator,
         dtype: torch.dtype = torch.float64, device: str = "cpu") -> Tensor:
    """i.i.d. entries of mean 0 and variance 1: N(0, 1) or U[-sqrt(3), sqrt(3)]."""
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if distribution == "gaussian":
        return torch.randn(*shape, generator=generator, dtype=dtype, device=device)
    return (2 * torch.rand(*shape, generator=generator, dtype=dtype, device=device) - 1) * math.sqrt(3.0)


def variance_relative_standard_error(d: int, n_samples: int, distribution: str = "gaussian") -> float:
    """Relative standard error of the sample variance of q . k: sqrt((2 + (kappa^2 - 3)/d) / N)."""
    kappa = KURTOSIS[check_choice("distribution", distribution, DISTRIBUTIONS)]
    return math.sqrt((2.0 + (kappa * kappa - 3.0) / d) / n_samples)


def dot_product_variance(dims: list[int], n_samples: int, *, generator: torch.Generator,
                         distribution: str = "gaussian", dtype: torch.dtype = torch.float64,
                         device: str = "cpu") -> dict:
    """Sample variance of q . k and of q . k / sqrt(d) for each d (lists aligned with ``dims``: ``var_raw``,
    theory d; ``var_scaled``, theory 1; ``rel_se``, the relative standard error of both). Gaussian draws
    come in the order of attnlab.analysis.logit_scaling.dot_products (same numbers for the same generator)."""
    out: dict[str, list] = {"dims": list(dims), "var_raw": [], "var_scaled": [], "rel_se": []}
    for d in dims:
        rows = max(1, CHUNK_ELEMENTS // d)
        parts = []
        for start in range(0, n_samples, rows):
            m = min(rows, n_samples - start)
            q = draw((m, d), distribution, generator=generator, dtype=dtype, device=device)
            k = draw((m, d), distribution, generator=generator, dtype=dtype, device=device)
            parts.append((q * k).sum(-1))
        x = torch.cat(parts)
        out["var_raw"].append(x.var().item())
        out["var_scaled"].append((x / math.sqrt(d)).var().item())
        out["rel_se"].append(variance_relative_standard_error(d, n_samples, distribution))
    return out


def query_statistics(d: int, n_keys: int, n_queries: int, *, generator: torch.Generator,
                     distribution: str = "gaussian", dtype: torch.dtype = torch.float64,
                     device: str = "cpu") -> dict[str, Tensor]:
    """Per query, the softmax statistics of z_j = q . k_j (``<stat>_raw``) and of z / sqrt(d) (``<stat>_scaled``):
    entropy H(s), the largest probability, ||J_s||_F (eq. 8) and ||J_s^T g|| for a random unit upstream
    gradient g (what back-propagation hands the logits); each a tensor (n_queries,).

    q (m, d), K (m, n_keys, d) and g (m, n_keys) are drawn chunk by chunk in the order of
    attnlab.analysis.logit_scaling.attention_logit_sweep, whose means these are for Gaussian draws; the
    Jacobians are formed for at most 2^22 / n_keys^2 queries at a time (the same numbers, less memory)."""
    check_int("d", d, 1)
    check_int("n_keys", n_keys, 2)
    check_int("n_queries", n_queries, 1)
    parts: dict[str, list[Tensor]] = {f"{s}_{v}": [] for s in STATISTICS for v in ("raw", "scaled")}
    rows = max(1, CHUNK_ELEMENTS // (n_keys * d))
    for start in range(0, n_queries, rows):
        m = min(rows, n_queries - start)
        q = draw((m, d), distribution, generator=generator, dtype=dtype, device=device)  # (m, d)
        K = draw((m, n_keys, d), distribution, generator=generator, dtype=dtype, device=device)  # (m, n, d)
        g = torch.randn(m, n_keys, generator=generator, dtype=dtype, device=device)  # (m, n)
        g = g / g.norm(dim=-1, keepdim=True)
        z = torch.einsum("mnd,md->mn", K, q)  # (m, n)
        for v, zz in (("raw", z), ("scaled", z / math.sqrt(d))):
            parts[f"entropy_{v}"].append(softmax_entropy(zz))
            parts[f"max_prob_{v}"].append(torch.softmax(zz, -1).max(-1).values)
            step = max(1, CHUNK_ELEMENTS // n_keys ** 2)  # Jacobians (rows, n_keys, n_keys) of 2^22 numbers at most
            parts[f"jacobian_norm_{v}"] += [jacobian_frobenius_norm(zz[a:a + step]) for a in range(0, m, step)]
            parts[f"gradient_norm_{v}"].append(gradient_norm_through_softmax(zz, g))
    return {k: torch.cat(v).detach() for k, v in parts.items()}


def ratio_summary(raw: Tensor, scaled: Tensor, quantiles: tuple[float, ...] = QUANTILES) -> dict:
    """The per-query ratio r = raw / scaled: its quantiles ({"q10": ..., "q50": ...}), the share of
    queries with r < 1, and the ratio of the means mean(raw) / mean(scaled) (another statistic),
    with the share of the raw mean carried by the top tenth of queries by their raw value."""
    r = raw / scaled
    out = {f"q{round(100 * q)}": float(torch.quantile(r, q)) for q in quantiles}
    top = raw.sort(descending=True).values[: max(1, raw.numel() // 10)]
    out.update({"share_below_1": float((r < 1).double().mean()), "ratio_of_means": float(raw.mean() / scaled.mean()),
                "top_tenth_share_of_raw_mean": float(top.sum() / raw.sum()), "queries": int(r.numel())})
    return out


__all__ = ["DISTRIBUTIONS", "KURTOSIS", "QUANTILES", "STATISTICS", "dot_product_variance", "draw",
           "query_statistics", "ratio_summary", "variance_relative_standard_error"]
